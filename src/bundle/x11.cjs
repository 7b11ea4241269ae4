// Stands in for dbus-next's optional `x11`: finding a session bus through an X display is never
// needed on a node, and dbus-next reports a null module as "installed without x11 support".
module.exports = null;
