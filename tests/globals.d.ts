// Tests read JSON bodies of many shapes; let them be `any` there rather than casting at every call.
declare global {
  interface Response {
    json(): Promise<any>;
  }
}
export {};
