// lib_activation.cpp: activation.cu on the CPU emulator, exported for the
// Go tests of package cuda (TestActivationEmulated, the fake driver), which
// load the shared library built from the lib_*.cpp files with purego and
// launch kernels through it.
#include "cuda_emu.h"
#include "../activation.cu"

EMU_EXPORT(relu_f32)
EMU_EXPORT(add_relu_f32)
EMU_EXPORT(relu_back_f32)
