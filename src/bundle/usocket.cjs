// Stands in for dbus-next's optional native `usocket` in the single executable, which can load no
// native module: dbus-next catches this and uses a plain unix socket (no file descriptor passing,
// which the agent never needs).
throw new Error('usocket is not part of the sno-relocate executable');
