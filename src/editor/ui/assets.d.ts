/** esbuild bundles a stylesheet as its text (scripts/build.js: loader "text"). */
declare module "*.css" {
  const text: string;
  export default text;
}
