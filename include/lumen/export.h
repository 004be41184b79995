/* lumen: LUMEN_API marks what liblumen.so exports. The library is built with
   -fvisibility=hidden, so only functions declared with LUMEN_API in include/lumen/ are visible to
   users of the shared library; everything else is internal (scripts/check_exports.sh checks). */
#ifndef LUMEN_EXPORT_H
#define LUMEN_EXPORT_H

#ifndef LUMEN_API
#if defined(__GNUC__) || defined(__clang__)
#define LUMEN_API __attribute__((visibility("default")))
#else
#define LUMEN_API
#endif
#endif

#endif
