// Owns the one declaration the benches need for autocannon (it ships no types): bench/load-http.ts narrows it.
declare module 'autocannon';
