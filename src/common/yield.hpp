// Polite spinning: waits inside nbrma must not starve other ranks when ranks
// outnumber cores (the CI machine has 2 cores and runs 4 ranks).
#ifndef NBRMA_COMMON_YIELD_HPP
#define NBRMA_COMMON_YIELD_HPP

namespace nbrma {

// Record how many ranks share this node (set at window creation).
void set_local_ranks(int ranks);

// True when this node's ranks outnumber its cores: waits must then yield the CPU.
bool oversubscribed();

// Call once per iteration of a wait loop; yields the CPU when oversubscribed, and
// after a short spin otherwise.
class Backoff {
  public:
    void pause();

  private:
    unsigned spins_ = 0;
};

}  // namespace nbrma

#endif
