dnl MPS_CHECK_CMOCKA: cmocka runs the unit tests; without it they are skipped.
AC_DEFUN([MPS_CHECK_CMOCKA], [
  PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.0], [have_cmocka=yes], [have_cmocka=no])
  AS_IF([test "x$have_cmocka" = xno],
    [AC_MSG_WARN([cmocka not found: unit tests will be skipped (apt-get install libcmocka-dev)])])
  AM_CONDITIONAL([HAVE_CMOCKA], [test "x$have_cmocka" = xyes])
])
