// duel_emu.cpp: runs duel_update of duel.cu on the CPU emulator for the Go
// test TestDUELEmulated (package cuda), which compares its decisions with
// memory.DUEL. Input on stdin, little-endian: int32 K, B, Z, protect,
// haveScores, block; float32 mem[K*Z], batch[B*Z]; float64 scores[K] when
// haveScores. Output on stdout: int32 evicted[B], kept[K]; float64
// scores[K].
#include "cuda_emu.h"
#include "../duel.cu"

template <class T>
static void readAll(std::vector<T>& v) {
    if (!v.empty() && std::fread(v.data(), sizeof(T), v.size(), stdin) != v.size()) {
        std::fprintf(stderr, "duel_emu: short input\n");
        std::exit(2);
    }
}

int main() {
    std::vector<int> hdr(6);
    readAll(hdr);
    const int K = hdr[0], B = hdr[1], Z = hdr[2], protect = hdr[3], have = hdr[4], block = hdr[5];
    const long long w = (long long)K + B;
    std::vector<float> mem((size_t)K * Z), batch((size_t)B * Z);
    readAll(mem);
    readAll(batch);
    std::vector<double> score(w);
    if (have) {
        std::vector<double> s(K);
        readAll(s);
        std::copy(s.begin(), s.end(), score.begin());
    }
    std::vector<int> grid(w * Z), dots(std::max<long long>(B * w, 1)), evicted(std::max(B, 1)), kept(K);
    std::vector<unsigned char> flags(w);
    emu::launch(dim3(1), dim3(block), duel_update, (const float*)mem.data(), (const float*)batch.data(), K, B, Z, protect, have,
                grid.data(), dots.data(), score.data(), flags.data(), evicted.data(), kept.data());
    std::fwrite(evicted.data(), 4, B, stdout);
    std::fwrite(kept.data(), 4, K, stdout);
    std::fwrite(score.data(), 8, K, stdout);
    return 0;
}
