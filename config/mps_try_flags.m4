# MPS_TRY_FLAGS(CFLAGS, LDFLAGS, [IF-WORKS], [IF-NOT])
# Whether the compiler and linker take these extra flags for a small program (one that
# builds a shared object, since the flags are meant for libmpishim).
AC_DEFUN([MPS_TRY_FLAGS], [
  mps_save_CFLAGS=$CFLAGS
  mps_save_LDFLAGS=$LDFLAGS
  CFLAGS="$CFLAGS $1"
  LDFLAGS="$LDFLAGS $2"
  AC_MSG_CHECKING([whether $CC accepts $1 $2])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[int mps_try(int x) { return x + 1; }]],
                                  [[return mps_try(0) - 1;]])],
    [AC_MSG_RESULT([yes])
     $3],
    [AC_MSG_RESULT([no])
     $4])
  CFLAGS=$mps_save_CFLAGS
  LDFLAGS=$mps_save_LDFLAGS
])
