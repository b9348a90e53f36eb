// FibaImplT's explicit instantiations (fiba_impl.hpp says why in three files): the float64
// first stages (Sum, Max, Min, Composite of two) and the composite of two tagged cells that
// Composite-of-two falls back to.
#include "fiba_impl.hpp"

namespace windowagg::py {

template struct FibaImplT<F64SumAdapter, int64_t>;
template struct FibaImplT<F64MaxAdapter, int64_t>;
template struct FibaImplT<F64MinAdapter, int64_t>;
template struct FibaImplT<F64Composite2Adapter, int64_t>;
template struct FibaImplT<CompositeAdapterT<2>, int64_t>;

}  // namespace windowagg::py
