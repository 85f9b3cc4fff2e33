# mpiover's Spack package: one installation per MPI, built by the project's
# own scripts/install (so that Spack and a hand-made prefix are laid out, and
# behave, the same). packaging/spack/README.md says how a site adds it.

from spack.package import *

try:
    # Spack 1.0 and later keep the build-system classes in the builtin
    # package repository; before 1.0, spack.package exports them.
    from spack_repo.builtin.build_systems.generic import Package  # noqa: F811
except ImportError:
    pass


class Mpiover(Package):
    """MPI profiler that ranks source lines by avoidable communication time:
    a preloaded PMPI library (libmpiover.so), a calibration benchmark
    (mpiover-calibrate) and the report command (mpiover)."""

    # No public release to download yet: a site points the package at its
    # copy of the repository (packages.yaml, package_attributes: git), or
    # builds a checkout with `spack develop` (packaging/spack/README.md).
    version("main", branch="main")

    license("MIT OR Apache-2.0")

    # libmpiover.so and mpiover-calibrate are compiled against this MPI's
    # mpi.h and linked with its library: one installation per MPI.
    depends_on("mpi")
    depends_on("rust@1.80:", type="build")
    # bindgen reads mpi.h through libclang at build time.
    depends_on("llvm+clang", type="build")

    def setup_build_environment(self, env):
        env.set("MPICC", self.spec["mpi"].mpicc)
        env.set("LIBCLANG_PATH", self.spec["llvm"].prefix.lib)
        # Cargo's output stays in the stage, never in the source tree (a
        # `spack develop` checkout keeps its own target/ untouched).
        env.set("CARGO_TARGET_DIR", join_path(self.stage.path, "cargo-target"))

    def install(self, spec, prefix):
        bash = which("bash")
        bash("scripts/install", prefix)

