// Package safetensors reads and writes the safetensors file format:
//
//	8 bytes   N, the header size, unsigned little-endian
//	N bytes   JSON header {name: {"dtype": "F32", "shape": [2, 3],
//	          "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
//	rest      the data buffer; offsets are relative to its start
//
// Reading validates everything: the header size is bounded (MaxHeaderSize)
// and within the file, the header is a single JSON object with unique keys
// and no trailing data, each dtype is known, and the tensors' byte ranges
// tile the buffer exactly (no gap, no overlap, nothing left over), each
// spanning its dtype size times its element count. F32, F64, I32 and I64
// are decoded; other dtypes of the specification are a clear error.
package safetensors
