# Sourced by the scripts: lets Open MPI run as root (CI, containers) and start
# more ranks than cores (this project's machines have 2).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Quiet Open MPI's warnings about missing high-speed networks in containers.
export OMPI_MCA_btl_base_warn_component_unused=0
