// FibaImplT's explicit instantiations (fiba_impl.hpp says why in three files): the other
// numeric kinds (Count, Mean, Variance, StdDev, First, Last).
#include "fiba_impl.hpp"

namespace windowagg::py {

template struct FibaImplT<CountAdapter, int64_t>;
template struct FibaImplT<MeanAdapter, int64_t>;
template struct FibaImplT<VarianceAdapter, int64_t>;
template struct FibaImplT<StdDevAdapter, int64_t>;
template struct FibaImplT<FirstAdapter, int64_t>;
template struct FibaImplT<LastAdapter, int64_t>;

}  // namespace windowagg::py
