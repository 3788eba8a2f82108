/** `1 property`, `2 properties`, `0 event scripts`: a count with its noun in the right number. */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}
