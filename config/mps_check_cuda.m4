dnl MPS_CHECK_CUDA: --with-cuda[=DIR], default "use if found" in /usr/local/cuda.
dnl Missing is a warning; missing but requested is an error. Defines HAVE_CUDA 0/1.
dnl libmpishim does not link the CUDA runtime: pg_core/pg_device.c opens it at run time
dnl (dlopen), so CUDA_LIBS is only for the programs that call CUDA themselves (tests/gpu,
dnl the device examples), and MPS_CUDA_LIBDIR is where the library looks after the loader.
AC_DEFUN([MPS_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA runtime for device buffers, opened at run time (default: use if found in /usr/local/cuda)])],
    [], [with_cuda=check])
  mps_have_cuda=no
  CUDA_CPPFLAGS=; CUDA_LDFLAGS=; CUDA_LIBS=
  AS_IF([test "x$with_cuda" != xno], [
    AS_CASE([$with_cuda], [yes|check], [mps_cuda_dir=/usr/local/cuda], [mps_cuda_dir=$with_cuda])
    mps_save_CPPFLAGS=$CPPFLAGS; mps_save_LDFLAGS=$LDFLAGS; mps_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS -I$mps_cuda_dir/include"
    LDFLAGS="$LDFLAGS -L$mps_cuda_dir/lib64"
    AC_CHECK_HEADER([cuda_runtime.h],
      [AC_CHECK_LIB([cudart], [cudaPointerGetAttributes], [mps_have_cuda=yes])])
    CPPFLAGS=$mps_save_CPPFLAGS; LDFLAGS=$mps_save_LDFLAGS; LIBS=$mps_save_LIBS
    AS_IF([test "x$mps_have_cuda" = xyes], [
      CUDA_CPPFLAGS="-I$mps_cuda_dir/include"
      CUDA_LDFLAGS="-L$mps_cuda_dir/lib64 -Wl,-rpath,$mps_cuda_dir/lib64"
      CUDA_LIBS="-lcudart"
      dnl The soname the headers' ABI needs: libcudart.so.<CUDART_VERSION / 1000>.
      mps_cudart_version=`sed -n 's/^#define CUDART_VERSION  *//p' \
        "$mps_cuda_dir/include/cuda_runtime_api.h" 2>/dev/null`
      AS_IF([expr "x$mps_cudart_version" : 'x@<:@0-9@:>@@<:@0-9@:>@*$' >/dev/null],
        [MPS_CUDART_SONAME="libcudart.so.`expr $mps_cudart_version / 1000`"],
        [MPS_CUDART_SONAME=libcudart.so])
      AC_DEFINE_UNQUOTED([MPS_CUDA_LIBDIR], ["$mps_cuda_dir/lib64"],
                         [directory of the CUDA runtime found at configure time])
    ], [test "x$with_cuda" = xcheck], [
      AC_MSG_WARN([CUDA not found in $mps_cuda_dir: device buffers unsupported])
    ], [
      AC_MSG_ERROR([--with-cuda given but cuda_runtime.h/libcudart not found in $mps_cuda_dir])
    ])
  ])
  AS_IF([test "x$mps_have_cuda" = xyes], [mps_cuda_val=1], [mps_cuda_val=0])
  AC_DEFINE_UNQUOTED([HAVE_CUDA], [$mps_cuda_val], [1 when the CUDA runtime is compiled in])
  AC_SUBST([CUDA_CPPFLAGS]) AC_SUBST([CUDA_LDFLAGS]) AC_SUBST([CUDA_LIBS])
  AC_SUBST([MPS_CUDART_SONAME])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$mps_have_cuda" = xyes])
])
