// RmaCall builders shared by the engine unit tests (sim_fixture.hpp) and the models
// (test/model): no GoogleTest here, so a model program can include it.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "engine/window.hpp"

namespace nbrma::engine::simtest {

// One 64-bit put of *value to `target` at `displacement` (disp_unit 1).
inline RmaCall put_call(int target, MPI_Aint displacement, const std::int64_t *value) {
    RmaCall call;
    call.kind = RmaKind::put;
    call.origin = value;
    call.origin_count = 1;
    call.origin_type = MPI_INT64_T;
    call.target = target;
    call.displacement = displacement;
    call.target_count = 1;
    call.target_type = MPI_INT64_T;
    return call;
}

// One 64-bit get from `target` at `displacement` into *into (disp_unit 1).
inline RmaCall get_call(int target, MPI_Aint displacement, std::int64_t *into) {
    RmaCall call;
    call.kind = RmaKind::get;
    call.result = into;
    call.result_count = 1;
    call.result_type = MPI_INT64_T;
    call.target = target;
    call.displacement = displacement;
    call.target_count = 1;
    call.target_type = MPI_INT64_T;
    return call;
}

}  // namespace nbrma::engine::simtest
