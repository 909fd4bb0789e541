dnl MPS_CHECK_NCCL: --with-nccl[=DIR], default "use if found" (needs CUDA).
dnl Missing is a warning; missing but requested is an error. Defines HAVE_NCCL 0/1.
dnl As for CUDA, libmpishim opens NCCL at run time: NCCL_LIBS is for the programs that call
dnl NCCL themselves (bench/dev_bench), MPS_NCCL_LIBDIR where the library looks after the loader.
AC_DEFUN([MPS_CHECK_NCCL], [
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@], [NCCL for device collectives, opened at run time (default: use if found)])],
    [], [with_nccl=check])
  mps_have_nccl=no
  NCCL_CPPFLAGS=; NCCL_LDFLAGS=; NCCL_LIBS=
  AS_IF([test "x$with_nccl" != xno && test "x$mps_have_cuda" = xyes], [
    AS_CASE([$with_nccl], [yes|check], [mps_nccl_dir=$mps_cuda_dir], [mps_nccl_dir=$with_nccl])
    mps_save_CPPFLAGS=$CPPFLAGS; mps_save_LDFLAGS=$LDFLAGS; mps_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS -I$mps_nccl_dir/include"
    LDFLAGS="$LDFLAGS $CUDA_LDFLAGS -L$mps_nccl_dir/lib64 -L$mps_nccl_dir/lib"
    AC_CHECK_HEADER([nccl.h], [AC_CHECK_LIB([nccl], [ncclCommInitRank], [mps_have_nccl=yes], [], [-lcudart])])
    CPPFLAGS=$mps_save_CPPFLAGS; LDFLAGS=$mps_save_LDFLAGS; LIBS=$mps_save_LIBS
    AS_IF([test "x$mps_have_nccl" = xyes], [
      NCCL_CPPFLAGS="-I$mps_nccl_dir/include"
      NCCL_LDFLAGS="-L$mps_nccl_dir/lib64 -L$mps_nccl_dir/lib -Wl,-rpath,$mps_nccl_dir/lib64"
      NCCL_LIBS="-lnccl"
      mps_nccl_libdir=$mps_nccl_dir/lib64
      AS_IF([test ! -e "$mps_nccl_libdir/libnccl.so.2" && test -e "$mps_nccl_dir/lib/libnccl.so.2"],
        [mps_nccl_libdir=$mps_nccl_dir/lib])
      AC_DEFINE_UNQUOTED([MPS_NCCL_LIBDIR], ["$mps_nccl_libdir"],
                         [directory of the NCCL found at configure time])
    ])
  ])
  AS_IF([test "x$mps_have_nccl" = xno && test "x$with_nccl" != xno && test "x$with_nccl" != xcheck],
    [AC_MSG_ERROR([--with-nccl given but nccl.h/libnccl not found (or CUDA missing)])])
  AS_IF([test "x$mps_have_nccl" = xno && test "x$with_nccl" = xcheck],
    [AC_MSG_WARN([NCCL not found: device collectives will use host staging])])
  AS_IF([test "x$mps_have_nccl" = xyes], [mps_nccl_val=1], [mps_nccl_val=0])
  AC_DEFINE_UNQUOTED([HAVE_NCCL], [$mps_nccl_val], [1 when NCCL is compiled in])
  AC_SUBST([NCCL_CPPFLAGS]) AC_SUBST([NCCL_LDFLAGS]) AC_SUBST([NCCL_LIBS])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$mps_have_nccl" = xyes])
])
