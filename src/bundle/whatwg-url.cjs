// Stands in for whatwg-url, which node-fetch 2 loads only for a fallback: it takes `URL` from
// Node's own url module and whatwg-url's when that has none (node-fetch lib/index.js,
// `Url.URL || whatwgUrl.URL`). Node 20 has one, so the fallback is Node's URL too, and the bundle
// leaves out whatwg-url and tr46's Unicode mapping table (a quarter of a megabyte of source,
// which every process of the executable holds in memory).
module.exports = { URL: globalThis.URL };
