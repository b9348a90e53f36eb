// FibaImplT's explicit instantiations (fiba_impl.hpp says why in three files): the tagged
// numeric adapters (Sum, Max, Min: what the float64 first stages fall back to), Count, Mean,
// and the one tree of Variance and StdDev (KindAdapter, the kind a field).
#include "fiba_impl.hpp"

namespace windowagg::py {

template struct FibaImplT<SumAdapter, int64_t>;
template struct FibaImplT<MaxAdapter, int64_t>;
template struct FibaImplT<MinAdapter, int64_t>;
template struct FibaImplT<CountAdapter, int64_t>;
template struct FibaImplT<MeanAdapter, int64_t>;
template struct FibaImplT<KindAdapter, int64_t>;

}  // namespace windowagg::py
