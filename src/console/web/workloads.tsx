export function WorkloadsPage() {
  return <section />;
}
