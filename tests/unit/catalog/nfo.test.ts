// The .nfo reader on its own: what it takes, what it refuses, and that it never expands an entity.
import { describe, expect, test } from 'bun:test';
import { NFO_MAX_BYTES, parseNfo } from '../../../src/services/catalog/metadata/nfo';
import { foldWords, searchTextOf } from '../../../src/services/catalog/search';

describe('parseNfo', () => {
  test('reads the root element\'s own title, plot, year and genres, not those of nested elements', () => {
    const nfo = parseNfo('<movie><actor><title>Nested</title></actor><title>Heat &amp; Dust</title><outline>Short.</outline><premiered>1995-12-15</premiered><genre>Crime / Drama</genre><genre>Drama</genre></movie>');
    expect(nfo).toEqual({ root: 'movie', title: 'Heat & Dust', originalTitle: undefined, overview: 'Short.', year: 1995, genres: ['Crime', 'Drama'] });
  });

  test('refuses a file with a DTD, so no declared entity is ever expanded', () => {
    expect(parseNfo('<!DOCTYPE movie [<!ENTITY x "boom">]><movie><title>&x;</title></movie>')).toBeNull();
  });

  test('leaves an undeclared entity as written and decodes character references', () => {
    expect(parseNfo('<movie><title>A &x; &#233;&#xE9;</title></movie>')?.title).toBe('A &x; éé');
  });

  test('answers null for a bare URL, broken XML, an unknown root or a file past the size bound', () => {
    expect(parseNfo('https://www.imdb.com/title/tt0211915/')).toBeNull();
    expect(parseNfo('<movie><title>x</movie>')).toBeNull();
    expect(parseNfo('<album><title>x</title></album>')).toBeNull();
    expect(parseNfo(`<movie><plot>${'a'.repeat(NFO_MAX_BYTES)}</plot></movie>`)).toBeNull();
  });
});

describe('search folding', () => {
  test('folds case, accents and ligatures, and splits on anything not a letter or digit', () => {
    expect(foldWords("Le Fabuleux Destin d'AMÉLIE Poulain")).toEqual(['le', 'fabuleux', 'destin', 'd', 'amelie', 'poulain']);
    expect(foldWords('Straße Œuvre')).toEqual(['strasse', 'oeuvre']);
    expect(searchTextOf('Amélie', 'Amelie')).toBe(' amelie ');
  });
});
