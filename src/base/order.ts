/**
 * Orders strings by UTF-16 code unit, the same on every host: `localeCompare` depends on the
 * locale and ICU data of the machine, so a rendered file or a hash could differ between the
 * factory and a node.
 */
export const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
