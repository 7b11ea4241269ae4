// Stands in for optional native helpers the bundled libraries try to load and do without: ws's
// bufferutil and utf-8-validate, node-fetch's encoding. Failing as a missing module does makes each
// take its pure JavaScript path, and the single executable never asks for a module from disk (which
// Node answers with a warning on stderr, so in the journal).
const err = new Error('optional module left out of the sno-relocate bundle');
err.code = 'MODULE_NOT_FOUND';
throw err;
