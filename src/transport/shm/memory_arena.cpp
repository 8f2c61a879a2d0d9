#include "transport/shm/memory_arena.hpp"

#include <cstdint>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include "transport/shm/user_memory.hpp"

namespace nbrma::transport::shm {
namespace {

constexpr std::size_t chunk_bytes = std::size_t{8} << 20;
constexpr std::size_t own_above = std::size_t{1} << 20;  // larger blocks: a memfd each
constexpr std::size_t grain = 64;

struct Chunk {
    std::uintptr_t low = 0;
    std::map<std::size_t, std::size_t> free;  // offset -> length, coalesced
    std::size_t used = 0;                     // bytes in live blocks
};

struct Block {
    Chunk *chunk;  // nullptr: a memfd of its own
    std::size_t offset, length;
};

std::mutex arena_mutex;
std::list<Chunk> chunks;  // stable addresses
std::unordered_map<std::uintptr_t, Block> blocks;

std::size_t round_up(std::size_t value, std::size_t to) { return (value + to - 1) / to * to; }

// First fit of `size` bytes at a multiple of `alignment` in c; nullptr if none.
void *carve(Chunk &c, std::size_t size, std::size_t alignment) {
    for (auto it = c.free.begin(); it != c.free.end(); ++it) {
        const std::size_t offset = it->first, length = it->second;
        const std::size_t pad = round_up(c.low + offset, alignment) - (c.low + offset);
        if (pad > length || length - pad < size) continue;
        c.free.erase(it);
        if (pad > 0) c.free[offset] = pad;
        if (length - pad > size) c.free[offset + pad + size] = length - pad - size;
        c.used += size;
        const std::uintptr_t address = c.low + offset + pad;
        blocks[address] = Block{&c, offset + pad, size};
        return reinterpret_cast<void *>(address);
    }
    return nullptr;
}

// [offset, offset + length) of c is free again.
void give_back(Chunk &c, std::size_t offset, std::size_t length) {
    c.used -= length;
    auto next = c.free.lower_bound(offset);
    if (next != c.free.end() && offset + length == next->first) {
        length += next->second;
        next = c.free.erase(next);
    }
    if (next != c.free.begin()) {
        auto previous = std::prev(next);
        if (previous->first + previous->second == offset) {
            previous->second += length;
            return;
        }
    }
    c.free[offset] = length;
}

}  // namespace

void *arena_allocate(std::size_t size, std::size_t alignment) {
    if (size == 0 || size > SIZE_MAX / 2) return nullptr;
    if (alignment < grain) alignment = grain;
    std::lock_guard<std::mutex> lock(arena_mutex);
    if (size > own_above || alignment > own_above) {
        void *base = user_memory_map_owned(size, alignment);
        if (base) blocks[reinterpret_cast<std::uintptr_t>(base)] = Block{nullptr, 0, size};
        return base;
    }
    size = round_up(size, grain);
    for (Chunk &c : chunks)
        if (void *base = carve(c, size, alignment)) return base;
    void *low = user_memory_map_owned(chunk_bytes, grain);
    if (!low) return nullptr;
    chunks.emplace_back();
    Chunk &c = chunks.back();
    c.low = reinterpret_cast<std::uintptr_t>(low);
    c.free[0] = chunk_bytes;
    return carve(c, size, alignment);
}

bool arena_free(void *base) {
    std::lock_guard<std::mutex> lock(arena_mutex);
    auto found = blocks.find(reinterpret_cast<std::uintptr_t>(base));
    if (found == blocks.end()) return false;
    const Block block = found->second;
    blocks.erase(found);
    if (!block.chunk) {
        user_memory_unmap_owned(base);
        return true;
    }
    give_back(*block.chunk, block.offset, block.length);
    if (block.chunk->used == 0 && chunks.size() > 1) {
        user_memory_unmap_owned(reinterpret_cast<void *>(block.chunk->low));
        for (auto it = chunks.begin(); it != chunks.end(); ++it)
            if (&*it == block.chunk) {
                chunks.erase(it);
                break;
            }
    }
    return true;
}

std::size_t arena_blocks() {
    std::lock_guard<std::mutex> lock(arena_mutex);
    return blocks.size();
}

std::size_t arena_chunks() {
    std::lock_guard<std::mutex> lock(arena_mutex);
    return chunks.size();
}

}  // namespace nbrma::transport::shm
