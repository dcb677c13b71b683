// The address rules clones (and webhooks) share: every spelling of a refused address is refused, and a
// name is judged by every address it resolves to. Name resolution is the one outside part replaced
// here (a test cannot make a real name resolve to a metadata address without editing /etc/hosts).
import { describe, expect, test } from 'bun:test';
import { literalRefusal, resolveAllowed, TargetRefused } from '../../../../src/platform/net/address-policy';

const open = { denyPrivate: false };
const strict = { denyPrivate: true };

describe('IP literals', () => {
  test.each([
    ['169.254.169.254', 'metadata'],
    ['2852039166', 'metadata'],
    ['0xa9fea9fe', 'metadata'],
    ['0251.0376.0251.0376', 'metadata'],
    ['[::ffff:a9fe:a9fe]', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['192.0.0.192', 'metadata'],
    ['[fd00:ec2:0:0::254]', 'metadata'],
    ['169.254.1.2', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['224.0.0.1', 'not-unicast'],
    ['255.255.255.255', 'not-unicast'],
  ])('%s is refused as %s whatever the policy', (host, why) => {
    expect(literalRefusal(host, open)).toBe(why as any);
    expect(literalRefusal(host, strict)).toBe(why as any);
  });

  test.each(['127.0.0.1', '127.1', '0x7f000001', '10.0.0.1', '192.168.1.1', '172.16.0.1', '100.64.0.1', '::1', 'fd12::1', '0.0.0.0', '::ffff:10.0.0.1'])(
    '%s is allowed by default and refused as private when the operator denies private targets',
    (host) => {
      expect(literalRefusal(host, open)).toBeNull();
      expect(literalRefusal(host, strict)).toBe('private');
    },
  );

  test.each(['93.184.216.34', '2606:4700::1111', 'example.com', 'localhost'])('%s is not refused as a literal', (host) => {
    expect(literalRefusal(host, strict)).toBeNull();
  });
});

describe('names', () => {
  const resolver = (answers: string[]) => async () => answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  test('a name resolving to a metadata address is refused, even beside a public one', async () => {
    const r = resolveAllowed('rebind.example', open, resolver(['93.184.216.34', '169.254.169.254']));
    await expect(r).rejects.toBeInstanceOf(TargetRefused);
    await expect(r).rejects.toThrow('the host name resolves to a cloud metadata address');
  });

  test('a name resolving to private addresses passes by default and is refused when denied', async () => {
    expect(await resolveAllowed('git.internal', open, resolver(['10.1.2.3', '10.1.2.3']))).toEqual(['10.1.2.3']);
    await expect(resolveAllowed('git.internal', strict, resolver(['10.1.2.3']))).rejects.toThrow('private');
  });

  test('a name that does not resolve is refused', async () => {
    await expect(resolveAllowed('nowhere.invalid', open, async () => { throw new Error('ENOTFOUND'); })).rejects.toThrow('does not resolve');
  });

  test('the addresses to connect to are returned normalized', async () => {
    expect(await resolveAllowed('v6.example', open, resolver(['2606:4700:0:0:0:0:0:1111']))).toEqual(['2606:4700::1111']);
    expect(await resolveAllowed('0x7f.1', open)).toEqual(['127.0.0.1']);
  });
});

describe('addresses a service denies', () => {
  let current = ['172.30.5.9'];
  const withDeny = { denyPrivate: false, deny: { cidrs: ['10.213.0.0/16'], addresses: () => current } };

  test.each(['10.213.0.2', '10.213.255.254', '0x0ad50002', '::ffff:10.213.0.2', '172.30.5.9'])(
    '%s is refused as denied although private targets are allowed',
    (host) => {
      expect(literalRefusal(host, withDeny)).toBe('denied');
    },
  );

  test('addresses next to the denied ones stay allowed', () => {
    expect(literalRefusal('10.214.0.2', withDeny)).toBeNull();
    expect(literalRefusal('172.30.5.10', withDeny)).toBeNull();
  });

  test('the list of single addresses is read at every check', () => {
    current = ['172.30.5.10'];
    expect(literalRefusal('172.30.5.9', withDeny)).toBeNull();
    expect(literalRefusal('172.30.5.10', withDeny)).toBe('denied');
  });

  test('a name resolving into a denied range is refused', async () => {
    const r = resolveAllowed('ws.example', withDeny, async () => [{ address: '10.213.4.7', family: 4 }]);
    await expect(r).rejects.toBeInstanceOf(TargetRefused);
    await expect(r).rejects.toThrow('keeps out of reach');
  });
});

describe("the caller's own ports on this host", () => {
  const own = { denyPrivate: false, deny: { cidrs: [], hostPorts: () => [3100] } };

  test.each(['127.0.0.1', '127.9.9.9', '0.0.0.0', '::1', '::ffff:127.0.0.1'])('%s on an own port is refused as denied', (host) => {
    expect(literalRefusal(host, own, 3100)).toBe('denied');
  });

  test('another port of this host, and an own port number on another host, stay allowed', () => {
    expect(literalRefusal('127.0.0.1', own, 3105)).toBeNull();
    expect(literalRefusal('93.184.216.34', own, 3100)).toBeNull();
  });

  test('a name resolving to this host is refused on an own port', async () => {
    await expect(resolveAllowed('localhost', own, undefined, 3100)).rejects.toThrow("Keel's own port");
    expect(await resolveAllowed('localhost', own, undefined, 3105)).toContain('127.0.0.1');
  });
});
