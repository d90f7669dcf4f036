# Convenience targets. The build itself is CMake (see README.md); nothing here builds.

.PHONY: bench

# Start-up and in-sandbox cost of `anvil sandbox` vs bubblewrap and firejail (bench/README.md).
# Needs a release build: cmake --preset release && cmake --build --preset release
bench:
	bash bench/sandbox_start.sh
