#include <cstdio>
int main() { std::puts("harness"); return 0; }
