dnl MPS_CHECK_LIBFABRIC: libfabric is required (the transport of every message).
AC_DEFUN([MPS_CHECK_LIBFABRIC], [
  PKG_CHECK_MODULES([LIBFABRIC], [libfabric >= 1.10], [],
    [AC_MSG_ERROR([libfabric >= 1.10 not found (Debian: apt-get install libfabric-dev)])])
  LIBFABRIC_VERSION=`$PKG_CONFIG --modversion libfabric`
  AC_SUBST([LIBFABRIC_VERSION])
])
