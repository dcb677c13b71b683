// The preview host settings (APP_PREVIEW_DOMAIN, APP_PREVIEW_PUBLIC_URL) as start-up reads them: a
// bad value stops start-up naming the variable, never echoing a secret or a stack.
import { describe, expect, test } from 'bun:test';
import { ConfigError } from '../../../src/platform/config';
import { loadWorkspacesConfig } from '../../../src/services/workspaces/workspaces.config';

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadWorkspacesConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('the configuration was accepted');
}

describe('APP_PREVIEW_DOMAIN', () => {
  test('defaults to localhost (browsers send every *.localhost name to the loopback address)', () => {
    const c = loadWorkspacesConfig({});
    expect(c.previewDomain).toBe('localhost');
    expect(c.previewPublicUrl).toBeUndefined();
  });

  test('a wildcard DNS name is taken in lower case', () => {
    expect(loadWorkspacesConfig({ APP_PREVIEW_DOMAIN: 'Preview.Example.com' }).previewDomain).toBe('preview.example.com');
  });

  test('a value that is not a DNS name stops start-up naming the variable', () => {
    for (const bad of ['*.example.com', 'http://x', 'a..b', '-x.com', 'ex ample.com']) {
      expect(refusal({ APP_PREVIEW_DOMAIN: bad }).message).toContain('APP_PREVIEW_DOMAIN');
    }
  });
});

describe('APP_PREVIEW_PUBLIC_URL', () => {
  test('the form behind a TLS proxy, with {label} in its host, ends at the root of that host', () => {
    expect(loadWorkspacesConfig({ APP_PREVIEW_PUBLIC_URL: 'https://{label}.preview.example.com' }).previewPublicUrl).toBe('https://{label}.preview.example.com/');
    expect(loadWorkspacesConfig({ APP_PREVIEW_PUBLIC_URL: 'http://{label}.dev.test:8443/' }).previewPublicUrl).toBe('http://{label}.dev.test:8443/');
  });

  test('a form without {label} as its first host label, with a path, or not http(s) stops start-up', () => {
    for (const bad of ['https://preview.example.com', 'https://x.{label}.example.com', 'https://{label}.example.com/app/', 'ftp://{label}.example.com', '{label}.example.com']) {
      expect(refusal({ APP_PREVIEW_PUBLIC_URL: bad }).message).toContain('APP_PREVIEW_PUBLIC_URL');
    }
  });
});
