// A service's /openapi.json with every `$ref` replaced by the component it names, for tests that
// read a route's schemas where they apply (the document itself keeps named components).
import SwaggerParser from '@apidevtools/swagger-parser';

export async function dereferencedDocument(baseUrl: string): Promise<any> {
  const res = await fetch(baseUrl + '/openapi.json');
  if (res.status !== 200) throw new Error(`/openapi.json answered ${res.status}`);
  return SwaggerParser.dereference((await res.json()) as never);
}
