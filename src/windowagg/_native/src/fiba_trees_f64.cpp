// FibaImplT's explicit instantiations (fiba_impl.hpp says why in three files): the float64
// first stages and the tagged adapters they fall back to (Sum, Max, Min, Composite of two).
#include "fiba_impl.hpp"

namespace windowagg::py {

template struct FibaImplT<F64SumAdapter, int64_t>;
template struct FibaImplT<F64MaxAdapter, int64_t>;
template struct FibaImplT<F64MinAdapter, int64_t>;
template struct FibaImplT<F64Composite2Adapter, int64_t>;
template struct FibaImplT<CompositeAdapterT<2>, int64_t>;
template struct FibaImplT<SumAdapter, int64_t>;
template struct FibaImplT<MaxAdapter, int64_t>;
template struct FibaImplT<MinAdapter, int64_t>;

}  // namespace windowagg::py
