/* Basic types: only the freestanding C headers. Portable. */
#ifndef KERNEL_TYPES_H
#define KERNEL_TYPES_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/compiler.h"
#include "kernel/config.h"

#define ENOENT 2
#define EINVAL 22
#define EMFILE 24

#endif
