// A family's CUDA ladder as one table of launchers by step name. Each step is one file,
// <family>/<ladder>/<step>.cu, that defines its kernel and launcher and registers the launcher
// under the step's name with KL_STEP; the family's binding looks the name up (find_step in
// binding.h). No enum and no ordinal dispatch: adding a step adds a file and its ladder.yaml
// entry, and changes what no other step runs. The family's header defines the table with
// KL_STEP_TABLE; no source file of its own lists the steps.
//
//   // <family>.h:         using SiluStep = int (*)(const void* x, void* out, int64_t n, DType, cudaStream_t);
//   //                     KL_STEP_TABLE(silu, SiluStep);
//   // cuda_silu/vec4.cu:  int vec4(...) { ... }   KL_STEP(silu, vec4);
#pragma once

#include <map>
#include <string>
#include <type_traits>

#include "kernellab.h"

namespace kl {

template <typename Launch>
using StepTable = std::map<std::string, Launch>;

// Adds a launcher to a table while the family's library loads (a static object of the step's file).
template <typename Launch>
struct StepRegistrar {
  StepRegistrar(StepTable<Launch>& table, const char* name, Launch launch) { table.emplace(name, launch); }
};

}  // namespace kl

// The table's accessor, defined in the family's header: an inline function's static is one
// object for every source of the library (C++17), ready whichever step file's registrar runs
// first. The static_assert ends the macro so that its use takes a semicolon.
#define KL_STEP_TABLE(family, Launch)                                 \
  inline ::kl::StepTable<Launch>& family##_steps() {                  \
    static ::kl::StepTable<Launch> table;                             \
    return table;                                                     \
  }                                                                   \
  static_assert(::std::is_pointer<Launch>::value, "a step's launcher is a function pointer")
// Registers `fn` (a function in namespace kl or the file's anonymous namespace) as step `fn`.
#define KL_STEP(family, fn)                                                                         \
  static const ::kl::StepRegistrar<decltype(&fn)> kl_step_##fn(::kl::family##_steps(), #fn, &fn)
