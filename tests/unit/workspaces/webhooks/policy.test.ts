// The pure policies of webhooks: which target URLs are refused at registration (every spelling of an
// address, judged by the platform's address policy), the retry schedule with its jitter and
// Retry-After, and the configuration that feeds them.
import { describe, expect, test } from 'bun:test';
import { ConfigError } from '../../../../src/platform/config';
import { urlRefusal } from '../../../../src/services/workspaces/webhooks/target-policy';
import { JITTER, nextDelayMs, retryAfterMs, MAX_RETRY_AFTER_MS } from '../../../../src/services/workspaces/webhooks/retry-schedule';
import { parseDuration } from '../../../../src/platform/config';
import { loadWebhooksConfig } from '../../../../src/services/workspaces/webhooks/webhooks.config';

describe('target policy', () => {
  const metadataSpellings = [
    'http://169.254.169.254/latest/meta-data/',
    'http://169.254.169.254./',
    'http://0xa9fea9fe/',
    'http://2852039166/',
    'http://0251.0376.0251.0376/',
    'http://0xa9.0xfe.0xa9.0xfe/',
    'http://169.254.43518/',
    'http://169.16689662/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://[0:0:0:0:0:ffff:a9fe:a9fe]/',
    'http://[::169.254.169.254]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    'http://[2002:a9fe:a9fe::1]/',
    'http://[fe80::1]/',
    'http://[febf:ffff::1]/',
    'https://100.100.100.200/',
    'http://[fd00:ec2::254]/',
    'http://[FD00:EC2:0:0:0:0:0:254]/',
    'http://[::ffff:100.100.100.200]/',
    'http://169.254.0.1:8080/x',
    'http://255.255.255.255/',
    'http://224.0.0.1/',
  ];
  for (const url of metadataSpellings) {
    test(`${url} is refused even when private targets are allowed`, () => {
      expect(urlRefusal(url, { denyPrivate: false })).not.toBeNull();
    });
  }

  const privateSpellings = ['http://127.0.0.1:9000/', 'http://0x7f.1/', 'http://2130706433/', 'http://0177.0.0.1/', 'http://127.1/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://10.1.2.3/', 'http://172.16.0.1/', 'http://192.168.1.1/', 'http://[fd12:3456::1]/', 'http://100.64.0.1/', 'http://[::ffff:10.0.0.1]/', 'http://0.0.0.0/', 'http://0/', 'http://[::]/'];
  for (const url of privateSpellings) {
    test(`${url} is allowed by default and refused with APP_WEBHOOK_DENY_PRIVATE`, () => {
      expect(urlRefusal(url, { denyPrivate: false })).toBeNull();
      expect(urlRefusal(url, { denyPrivate: true })).toContain('loopback or private');
    });
  }

  test('public addresses and names pass at registration (names are judged after DNS, at delivery)', () => {
    for (const url of ['https://93.184.216.34/', 'https://[2606:2800:220:1:248:1893:25c8:1946]/', 'https://hooks.example.com/x?y=1', 'http://localhost:8080/']) {
      expect(urlRefusal(url, { denyPrivate: true })).toBeNull();
    }
  });

  test('only http and https URLs are accepted', () => {
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'javascript:alert(1)', 'example.com/hook', '//example.com', 'http://']) {
      expect(urlRefusal(url, { denyPrivate: false })).not.toBeNull();
    }
  });
});

describe('retry schedule', () => {
  const schedule = [0, 5_000, 300_000];
  test('the first attempt is immediate and later ones follow the schedule within the jitter', () => {
    expect(nextDelayMs(schedule, 0, () => 0.99)).toBe(0);
    expect(nextDelayMs(schedule, 1, () => 0.5)).toBe(5_000);
    expect(nextDelayMs(schedule, 1, () => 0)).toBe(5_000 * (1 - JITTER));
    expect(nextDelayMs(schedule, 2, () => 0.999999)).toBeCloseTo(300_000 * (1 + JITTER), -1);
  });
  test('a spent schedule means no further attempt', () => {
    expect(nextDelayMs(schedule, 3, Math.random)).toBeNull();
  });
  test('Retry-After is read as seconds or as an HTTP date, and capped', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('99999999', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs(null, now)).toBeNull();
  });
});

describe('configuration', () => {
  test('the default schedule is the Standard Webhooks one', () => {
    const c = loadWebhooksConfig({});
    expect(c.retrySchedule).toEqual([0, 5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 504e5, 72e6, 864e5]);
    expect(c.denyPrivate).toBe(false);
  });
  test('APP_WEBHOOK_RETRY_SCHEDULE replaces it, and a bad one names the variable', () => {
    expect(loadWebhooksConfig({ APP_WEBHOOK_RETRY_SCHEDULE: '0,100ms,1s' }).retrySchedule).toEqual([0, 100, 1000]);
    expect(() => loadWebhooksConfig({ APP_WEBHOOK_RETRY_SCHEDULE: '0,5x' })).toThrow(ConfigError);
    expect(() => loadWebhooksConfig({ APP_WEBHOOK_RETRY_SCHEDULE: '0,,5s' })).toThrow(/APP_WEBHOOK_RETRY_SCHEDULE/);
    expect(() => loadWebhooksConfig({ APP_WEBHOOK_DENY_PRIVATE: 'yes' })).toThrow(/APP_WEBHOOK_DENY_PRIVATE/);
    expect(() => loadWebhooksConfig({ APP_WEBHOOK_TIMEOUT: '5' })).toThrow(/APP_WEBHOOK_TIMEOUT/);
  });
  test('durations take ms, s, m, h and d', () => {
    expect([parseDuration('250ms'), parseDuration('5s'), parseDuration('5m'), parseDuration('2h'), parseDuration('1d'), parseDuration('0')]).toEqual([250, 5e3, 3e5, 72e5, 864e5, 0]);
    expect(parseDuration('5')).toBeNull();
  });
});
