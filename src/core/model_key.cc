#include "harness/core/model_key.h"

namespace harness {

Status<ModelKeyError> ModelKey::Validate() const {
  if (provider.empty())
    return Fail(ModelKeyError{ModelKeyField::kProvider});
  if (model.empty())
    return Fail(ModelKeyError{ModelKeyField::kModel});
  return {};
}

}  // namespace harness
