// The object model is defined with the API types (src/api/meta.ts), the bottom layer; the client's users
// read it from here.
export * from '../api/meta.ts';
