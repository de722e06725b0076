// The Catch2 main shared by every host test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
