#include "config.h"
typedef int placeholder_unused_t;
