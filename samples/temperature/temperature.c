/* temperature: the appliance check of "Fine-Grained Coverage-Based Fuzzing"
 * (Listing 1).  The limit test is off by one: `>=` where `>` was meant.  The
 * program crashes only when the temperature is exactly 50: the excess is then
 * zero and the fan-speed division traps.  Edge coverage sees nothing special
 * about 50; a weak-mutation label for `>=` vs `>` (killed iff temp == 50) does.
 *
 * Input: a 4-byte reading "T", sensor id, then the temperature as a
 * little-endian 16-bit signed value in degrees Celsius. */
#include <stdint.h>
#include <stdio.h>

#define TEMPERATURE_LIMIT 50

static int fan_speed_for(int current_temp) {
  if (current_temp >= TEMPERATURE_LIMIT) { /* BUG: should be > */
    int excess = current_temp - TEMPERATURE_LIMIT;
    return 3000 / excess + 1000; /* traps when excess == 0 */
  }
  return 0;
}

int main(int argc, char **argv) {
  unsigned char reading[4];
  FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
  if (!in || fread(reading, 1, sizeof reading, in) != sizeof reading || reading[0] != 'T') {
    fputs("temperature: need a 4-byte reading starting with 'T'\n", stderr);
    return 2;
  }
  int current_temp = (int16_t)(reading[2] | reading[3] << 8);
  int speed = fan_speed_for(current_temp);
  if (speed > 0)
    printf("sensor %u: %d C, over the limit: fan at %d rpm\n", reading[1], current_temp, speed);
  else
    printf("sensor %u: %d C, fine\n", reading[1], current_temp);
  return speed > 0;
}
