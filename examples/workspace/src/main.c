#include <stdio.h>

// TODO: read the greeting from a config file
int main(void) {
  printf("hello from the sample workspace\n");
  return 0;
}
