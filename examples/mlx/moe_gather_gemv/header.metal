#include <metal_simdgroup>
using namespace metal;
