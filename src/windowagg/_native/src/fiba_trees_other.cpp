// FibaImplT's explicit instantiations (fiba_impl.hpp says why in three files): First, Last,
// ArgMax and ArgMin (one adapter), Composite, and the generic trees (int64 and Python-object
// keys).
#include "fiba_impl.hpp"

namespace windowagg::py {

template struct FibaImplT<FirstAdapter, int64_t>;
template struct FibaImplT<LastAdapter, int64_t>;
template struct FibaImplT<ArgAdapter, int64_t>;
template struct FibaImplT<CompositeAdapter, int64_t>;
template struct FibaImplT<GenericAdapter, int64_t>;
template struct FibaImplT<GenericAdapter, ObjKey>;

}  // namespace windowagg::py
