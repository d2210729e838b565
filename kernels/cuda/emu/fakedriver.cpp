// fakedriver.cpp: a fake libcuda.so.1 for the Go tests (internal/cudatest's
// FakeDriver links it with the lib_*.cpp kernels). It implements the driver
// API functions cuda/driver binds, with device memory in host memory and
// kernels run on the CPU emulator, so that package cuda's Device and the
// driver bindings run without a GPU (DUEL_CUDA_DRIVER points at it).
//
// Work queued on a stream (launches, cuMemsetD8Async, cuMemcpyHtoDAsync,
// cuEventRecord) is deferred until something waits for it
// (cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize, the
// synchronous copies, cuMemcpyDtoHAsync into pageable memory), as a GPU
// defers it: a caller that reads device memory without waiting, or relies
// on a launch's parameters after it returned, sees the difference.
// cuMemFree with work pending aborts the process (the callers must wait
// first). Environment:
//
//   DUEL_FAKE_CUDA_FAIL=kernel    the kernel fails when it runs: the next
//                                 waiting call returns CUDA_ERROR_ILLEGAL_ADDRESS
//                                 (sticky, as on a device)
//   DUEL_FAKE_CUDA_MEMORY=bytes   device memory size (default 1 GiB): beyond
//                                 it cuMemAlloc returns CUDA_ERROR_OUT_OF_MEMORY
//   DUEL_FAKE_CUDA_CC=90          compute capability 9.0 (default 8.0): an
//                                 H100's 227 KiB of opt-in shared memory, and
//                                 the sm_90 modules load (duel_cluster.cu,
//                                 whose clusters the emulator runs; gemm_wg.cu's
//                                 sm_90a, which loads on 9.0 only)
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

namespace {

enum : CUresult {
    OK = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NOT_INITIALIZED = 3,
    INVALID_HANDLE = 400,
    NO_BINARY_FOR_GPU = 209,
    NOT_FOUND = 500,
    NOT_READY = 600,
    ILLEGAL_ADDRESS = 700,
};

struct Func {
    std::string name;
    void (*launch)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void**);
    size_t (*params)(size_t*);
    int maxShared = 48 << 10;
};

struct Event {
    bool recorded = false, done = false;
    std::chrono::steady_clock::time_point at;
};

std::recursive_mutex mu;
std::vector<std::function<void()>> queue;  // deferred work of every stream, in order
std::map<CUdeviceptr, size_t> allocs;
std::map<void*, size_t> pinned;
std::map<uintptr_t, bool> streams;
size_t used = 0;
CUresult sticky = OK;
bool initialised = false;
int ctxTag = 0x1234;

void* self() {
    static void* h = [] {
        Dl_info info;
        dladdr((void*)&self, &info);
        return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    }();
    return h;
}

// capability returns the compute capability the device reports (10*major
// + minor: 80, or DUEL_FAKE_CUDA_CC).
int capability() {
    const char* v = std::getenv("DUEL_FAKE_CUDA_CC");
    return v ? std::atoi(v) : 80;
}

// optInShared returns the most shared memory a block may opt in to: an
// A100's 163 KiB (gemm_tc2_tf32's 162 KiB fit, gemm_tc2_bf16's 204 do
// not), an H100's 227 KiB from 9.0 on.
int optInShared() { return capability() >= 90 ? 227 << 10 : 163 << 10; }

size_t memoryLimit() {
    const char* v = std::getenv("DUEL_FAKE_CUDA_MEMORY");
    return v ? std::strtoull(v, nullptr, 10) : size_t(1) << 30;
}

// flush runs the deferred work; it returns the sticky error.
CUresult flush() {
    std::vector<std::function<void()>> q;
    q.swap(queue);
    for (auto& f : q) f();
    return sticky;
}

bool knownStream(uintptr_t s) { return s == 0 || streams.count(s); }

// inDevice reports whether [p, p+n) lies in one allocation.
bool inDevice(CUdeviceptr p, size_t n) {
    auto it = allocs.upper_bound(p);
    if (it == allocs.begin()) return false;
    --it;
    return p >= it->first && p + n <= it->first + it->second;
}

}  // namespace

#define API extern "C" __attribute__((visibility("default"))) CUresult
#define LOCK std::lock_guard<std::recursive_mutex> lock(mu)

API cuInit(unsigned) { initialised = true; return OK; }
API cuDriverGetVersion(int* v) { *v = 12040; return OK; }
API cuDeviceGetCount(int* n) { *n = 1; return OK; }
API cuDeviceGet(int* d, int i) { if (i != 0) return INVALID_VALUE; *d = 0; return OK; }
API cuDeviceGetAttribute(int* v, int attr, int dev) {
    if (dev != 0) return INVALID_VALUE;
    switch (attr) {
    case 1: *v = 1024; break;            // max threads per block
    case 8: *v = 48 << 10; break;        // shared memory per block
    case 10: *v = 32; break;             // warp size
    case 13: *v = 1410000; break;        // peak SM clock, kHz (an A100's)
    case 16: *v = 4; break;              // multiprocessors
    case 75: *v = capability() / 10; break;  // compute capability, major
    case 76: *v = capability() % 10; break;
    case 97: *v = optInShared(); break;      // shared memory per block, opt-in
    default: return INVALID_VALUE;
    }
    return OK;
}
API cuDeviceGetName(char* name, int len, int) { std::snprintf(name, len, "duel fake CUDA device (CPU emulator)"); return OK; }
API cuDeviceTotalMem_v2(size_t* n, int) { *n = memoryLimit(); return OK; }
API cuDevicePrimaryCtxRetain(void** ctx, int) { *ctx = &ctxTag; return OK; }
API cuDevicePrimaryCtxRelease_v2(int) { return OK; }
API cuCtxCreate_v2(void** ctx, unsigned, int) { *ctx = &ctxTag; return OK; }
API cuCtxDestroy_v2(void*) { return OK; }
API cuCtxSetCurrent(void* ctx) { return ctx == &ctxTag ? OK : INVALID_VALUE; }
API cuCtxSynchronize() { LOCK; return flush(); }

// ptxLoads reports whether the device could JIT-compile PTX text: its
// .target sm_NN at most the capability, and an architecture-specific
// sm_NNa (gemm_wg.cu's sm_90a) only on capability NN itself.
bool ptxLoads(const char* ptx) {
    const char* t = std::strstr(ptx, ".target sm_");
    if (!t) return false;
    char* end;
    const long sm = std::strtol(t + 11, &end, 10);
    return *end == 'a' ? sm == capability() : sm <= capability();
}

API cuModuleLoadData(void** mod, const void* image) {
    if (!image || std::strstr((const char*)image, ".entry") == nullptr) return INVALID_VALUE;  // a PTX text
    if (!ptxLoads((const char*)image)) return NO_BINARY_FOR_GPU;
    *mod = new int(0);
    return OK;
}
API cuModuleUnload(void* mod) { delete (int*)mod; return OK; }
API cuModuleGetFunction(void** f, void*, const char* name) {
    auto* fn = new Func{name};
    fn->launch = (decltype(fn->launch))dlsym(self(), ("emu_" + fn->name).c_str());
    fn->params = (decltype(fn->params))dlsym(self(), ("emu_params_" + fn->name).c_str());
    if (!fn->launch || !fn->params) {
        delete fn;
        return NOT_FOUND;
    }
    *f = fn;
    return OK;
}
API cuFuncSetAttribute(void* f, int attr, int v) {
    if (attr != 8 || v < 0 || v > optInShared()) return INVALID_VALUE;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (at most the opt-in limit, attribute 97)
    ((Func*)f)->maxShared = v;
    return OK;
}

API cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
    LOCK;
    if (n == 0) return INVALID_VALUE;
    if (used + n > memoryLimit()) return OUT_OF_MEMORY;
    void* m = std::aligned_alloc(256, (n + 255) / 256 * 256);
    std::memset(m, 0xa5, n);  // cuMemAlloc does not zero
    *p = (CUdeviceptr)m;
    allocs[*p] = n;
    used += n;
    return OK;
}
API cuMemFree_v2(CUdeviceptr p) {
    LOCK;
    if (!queue.empty()) {
        std::fprintf(stderr, "fake libcuda: cuMemFree(%#llx) with %zu operations queued: wait for the stream before freeing\n", p, queue.size());
        std::abort();
    }
    auto it = allocs.find(p);
    if (it == allocs.end()) return INVALID_VALUE;
    used -= it->second;
    allocs.erase(it);
    std::free((void*)p);
    return OK;
}

API cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
    LOCK;
    if (CUresult r = flush()) return r;
    if (!inDevice(dst, n)) return INVALID_VALUE;
    std::memcpy((void*)dst, src, n);
    return OK;
}
API cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
    LOCK;
    if (CUresult r = flush()) return r;
    if (!inDevice(src, n)) return INVALID_VALUE;
    std::memcpy(dst, (void*)src, n);
    return OK;
}
API cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    LOCK;
    if (CUresult r = flush()) return r;
    if (!inDevice(dst, n) || !inDevice(src, n)) return INVALID_VALUE;
    std::memmove((void*)dst, (void*)src, n);
    return OK;
}
API cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
    LOCK;
    if (CUresult r = flush()) return r;
    if (!inDevice(p, n)) return INVALID_VALUE;
    std::memset((void*)p, v, n);
    return OK;
}

API cuStreamCreate(uintptr_t* s, unsigned) {
    LOCK;
    static uintptr_t next = 0x5000;
    *s = next++;
    streams[*s] = true;
    return OK;
}
API cuStreamDestroy_v2(uintptr_t s) {
    LOCK;
    if (!streams.erase(s)) return INVALID_HANDLE;
    return OK;
}
API cuStreamSynchronize(uintptr_t s) {
    LOCK;
    if (!knownStream(s)) return INVALID_HANDLE;
    return flush();
}
API cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, uintptr_t s) {
    LOCK;
    if (!knownStream(s)) return INVALID_HANDLE;
    if (sticky) return sticky;
    if (!inDevice(dst, n)) return INVALID_VALUE;
    auto pin = pinned.upper_bound((void*)src);
    bool isPinned = pin != pinned.begin() && (--pin, (char*)src + n <= (char*)pin->first + pin->second && src >= pin->first);
    if (isPinned) {  // read when the stream gets there, as a DMA from pinned memory
        queue.push_back([=] { std::memcpy((void*)dst, src, n); });
    } else {  // pageable: staged now, so src may be reused at once
        auto staged = std::make_shared<std::vector<char>>((const char*)src, (const char*)src + n);
        queue.push_back([=] { std::memcpy((void*)dst, staged->data(), n); });
    }
    return OK;
}
API cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, uintptr_t s) {
    LOCK;
    if (!knownStream(s)) return INVALID_HANDLE;
    if (!inDevice(src, n)) return INVALID_VALUE;
    if (pinned.count(dst)) {  // into pinned memory: asynchronous
        queue.push_back([=] { if (!sticky) std::memcpy(dst, (void*)src, n); });
        return sticky;
    }
    if (CUresult r = flush()) return r;  // into pageable memory: synchronous
    std::memcpy(dst, (void*)src, n);
    return OK;
}
API cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, uintptr_t s) {
    LOCK;
    if (!knownStream(s)) return INVALID_HANDLE;
    if (sticky) return sticky;
    if (!inDevice(p, n)) return INVALID_VALUE;
    queue.push_back([=] { if (!sticky) std::memset((void*)p, v, n); });
    return OK;
}
API cuMemHostAlloc(void** p, size_t n, unsigned) {
    LOCK;
    if (n == 0) return INVALID_VALUE;
    *p = std::malloc(n);
    pinned[*p] = n;
    return OK;
}
API cuMemFreeHost(void* p) {
    LOCK;
    if (!pinned.erase(p)) return INVALID_VALUE;
    std::free(p);
    return OK;
}

API cuLaunchKernel(void* fp, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, uintptr_t s, void** params, void** extra) {
    LOCK;
    auto* f = (Func*)fp;
    if (!f || !knownStream(s) || extra) return INVALID_VALUE;
    if (sticky) return sticky;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024 || gy > 65535 || gz > 65535)
        return INVALID_VALUE;
    if ((int)shared > f->maxShared) return INVALID_VALUE;  // beyond 48 KiB a kernel must opt in
    size_t sizes[32];
    size_t np = f->params(sizes);
    // The parameters are copied now, as the driver does: the caller's
    // memory may be gone when the kernel runs.
    auto blocks = std::make_shared<std::vector<std::vector<uint64_t>>>();
    for (size_t i = 0; i < np; i++) {
        blocks->emplace_back((sizes[i] + 7) / 8);
        std::memcpy(blocks->back().data(), params[i], sizes[i]);
    }
    static const char* fail = std::getenv("DUEL_FAKE_CUDA_FAIL");
    queue.push_back([=] {
        if (sticky) return;
        if (fail && f->name == fail) {
            sticky = ILLEGAL_ADDRESS;
            return;
        }
        std::vector<void*> ps;
        for (auto& b : *blocks) ps.push_back(b.data());
        f->launch(gx, gy, gz, bx, by, bz, shared, ps.data());
    });
    return OK;
}

API cuEventCreate(void** e, unsigned) { *e = new Event; return OK; }
API cuEventDestroy_v2(void* e) { delete (Event*)e; return OK; }
API cuEventRecord(void* ep, uintptr_t s) {
    LOCK;
    if (!knownStream(s)) return INVALID_HANDLE;
    auto* e = (Event*)ep;
    e->recorded = true;
    e->done = false;
    queue.push_back([=] {
        e->done = true;
        e->at = std::chrono::steady_clock::now();
    });
    return OK;
}
API cuEventSynchronize(void* e) {
    LOCK;
    if (!((Event*)e)->recorded) return INVALID_HANDLE;
    return flush();
}
API cuEventElapsedTime(float* ms, void* a, void* b) {
    LOCK;
    auto *ea = (Event*)a, *eb = (Event*)b;
    if (!ea->recorded || !eb->recorded) return INVALID_HANDLE;
    if (!ea->done || !eb->done) return NOT_READY;
    *ms = std::chrono::duration<float, std::milli>(eb->at - ea->at).count();
    return OK;
}

API cuGetErrorName(CUresult r, const char** s) {
    switch (r) {
    case OK: *s = "CUDA_SUCCESS"; break;
    case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case NO_BINARY_FOR_GPU: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
    case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
    case ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    default: return INVALID_VALUE;
    }
    return OK;
}
API cuGetErrorString(CUresult r, const char** s) {
    switch (r) {
    case OUT_OF_MEMORY: *s = "out of memory"; break;
    case ILLEGAL_ADDRESS: *s = "an illegal memory access was encountered (fake libcuda: DUEL_FAKE_CUDA_FAIL)"; break;
    default: return cuGetErrorName(r, s);
    }
    return OK;
}
