/* Fails on purpose: test 3 expects a wrong sum, so the run must end with
 * status 3 through tohost ((3 << 1) | 1). Tests 1 and 2 pass first, so a
 * status of 1 or 2 would mean a correct check was misjudged. */
#include "env.h"

ISA_BEGIN
  TEST_RR 1, add, 3, 1, 2
  TEST_RR 2, sub, 1, 3, 2
  TEST_RR 3, add, 5, 2, 2   /* wrong on purpose: 2 + 2 is 4 */
  TEST_RR 4, add, 4, 2, 2   /* never reached */
ISA_END
