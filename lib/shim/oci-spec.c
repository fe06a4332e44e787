/* SPDX-License-Identifier: Apache-2.0 */
#include "shim/oci-spec.h"
