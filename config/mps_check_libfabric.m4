dnl MPS_CHECK_LIBFABRIC: libfabric is required (the transport of every message).
AC_DEFUN([MPS_CHECK_LIBFABRIC], [
  PKG_CHECK_MODULES([LIBFABRIC], [libfabric >= 1.10], [],
    [AC_MSG_ERROR([libfabric >= 1.10 not found (Debian: apt-get install libfabric-dev)])])
  LIBFABRIC_VERSION=`$PKG_CONFIG --modversion libfabric`
  AC_SUBST([LIBFABRIC_VERSION])
  dnl The library is opened at run time (fabric/fab_dl.c): remember where it was found.
  mps_fabric_libdir=`$PKG_CONFIG --variable=libdir libfabric`
  AC_DEFINE_UNQUOTED([MPS_LIBFABRIC_LIBDIR], ["$mps_fabric_libdir"],
                     [directory of the libfabric found at configure time])
  AC_SEARCH_LIBS([dlopen], [dl], [], [AC_MSG_ERROR([dlopen is required to load libfabric])])
])
