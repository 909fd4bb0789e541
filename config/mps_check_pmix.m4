dnl MPS_CHECK_PMIX: PMIx is required (bootstrap under srun --mpi=pmix and mpirun).
AC_DEFUN([MPS_CHECK_PMIX], [
  PKG_CHECK_MODULES([PMIX], [pmix >= 3], [],
    [AC_MSG_ERROR([PMIx >= 3 not found (Debian: apt-get install libpmix-dev)])])
  PMIX_VERSION=`$PKG_CONFIG --modversion pmix`
  AC_SUBST([PMIX_VERSION])
])
