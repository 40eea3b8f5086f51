-- The type matrix of MySQL 9.x (matrix.sql's format; see its header): the
-- column types of matrix.sql that MySQL has, at their extremes, plus what
-- only MySQL has: native JSON (binary in the binlog), utf8mb4_0900_*
-- collations, invisible columns, generated columns (virtual and stored),
-- columns with an SRID (4326 and 0) and a spatial index, VECTOR, a table
-- with a generated invisible primary key (GIPK: hidden my_row_id), BINARY(16)
-- keys, and every character set of matrix.sql and more. Used by
-- TestMatrixLandsExactly and TestDebeziumConformance on a MySQL source.
-- Counts: see matrix.md next to this file.
SET time_zone = '+00:00';

CREATE TABLE ints (
  id    INT NOT NULL PRIMARY KEY,
  ti    TINYINT,
  tiu   TINYINT UNSIGNED,
  t1    TINYINT(1),
  bo    BOOLEAN,
  si    SMALLINT,
  siu   SMALLINT UNSIGNED,
  mi    MEDIUMINT,
  miu   MEDIUMINT UNSIGNED,
  i     INT,
  iu    INT UNSIGNED,
  bi    BIGINT,
  biu   BIGINT UNSIGNED,
  d_ti  TINYINT NOT NULL DEFAULT -7,
  d_i   INT DEFAULT 42,
  d_biu BIGINT UNSIGNED DEFAULT 18446744073709551615
);

CREATE TABLE nums (
  id    INT NOT NULL PRIMARY KEY,
  dec_w DECIMAL(65,30),
  dec0  DECIMAL(10,0),
  dec55 DECIMAL(5,5),
  decu  DECIMAL(20,4) UNSIGNED,
  f     FLOAT,
  fmd   FLOAT(7,3),
  d     DOUBLE,
  dmd   DOUBLE(12,4),
  r     REAL,
  b1    BIT(1),
  b7    BIT(7),
  b64   BIT(64),
  d_dec DECIMAL(8,3) DEFAULT 12.500,
  d_f   DOUBLE DEFAULT 1.5,
  d_b   BIT(4) DEFAULT b'1010'
);

CREATE TABLE times (
  id     INT NOT NULL PRIMARY KEY,
  dt     DATE,
  dtm0   DATETIME,
  dtm1   DATETIME(1),
  dtm3   DATETIME(3),
  dtm4   DATETIME(4),
  dtm6   DATETIME(6),
  ts0    TIMESTAMP NULL DEFAULT NULL,
  ts3    TIMESTAMP(3) NULL DEFAULT NULL,
  ts6    TIMESTAMP(6) NULL DEFAULT NULL,
  tm0    TIME,
  tm3    TIME(3),
  tm6    TIME(6),
  y      YEAR,
  d_dt   DATE DEFAULT '2000-01-01',
  d_dtm  DATETIME(3) DEFAULT '2000-01-01 12:00:00.500',
  d_ts   TIMESTAMP NOT NULL DEFAULT '2001-02-03 04:05:06',
  d_tm   TIME DEFAULT '-01:02:03',
  d_y    YEAR DEFAULT 1999
);

-- Every character set of matrix.sql, and utf8mb4 under 0900 collations.
CREATE TABLE strs (
  id       INT NOT NULL PRIMARY KEY,
  c        CHAR(10),
  vc       VARCHAR(255),
  tt       TINYTEXT,
  t        TEXT,
  mt       MEDIUMTEXT,
  lt       LONGTEXT,
  c_latin1 VARCHAR(60) CHARACTER SET latin1,
  c_latin2 VARCHAR(60) CHARACTER SET latin2,
  c_cp1251 VARCHAR(60) CHARACTER SET cp1251,
  c_gbk    VARCHAR(60) CHARACTER SET gbk,
  c_sjis   VARCHAR(60) CHARACTER SET sjis,
  c_utf8   VARCHAR(60) CHARACTER SET utf8mb3,
  c_ucs2   VARCHAR(60) CHARACTER SET ucs2,
  c_ascii  CHAR(8) CHARACTER SET ascii,
  c_ai     VARCHAR(60) COLLATE utf8mb4_0900_ai_ci,
  c_as     VARCHAR(60) COLLATE utf8mb4_0900_as_cs,
  c_bin    VARCHAR(60) COLLATE utf8mb4_0900_bin,
  c_ja     VARCHAR(60) COLLATE utf8mb4_ja_0900_as_cs,
  c_gb     VARCHAR(60) CHARACTER SET gb18030,
  c_u16    VARCHAR(60) CHARACTER SET utf16,
  c_u32    VARCHAR(60) CHARACTER SET utf32,
  c_big5   VARCHAR(60) CHARACTER SET big5,
  c_euckr  VARCHAR(60) CHARACTER SET euckr,
  c_koi8r  VARCHAR(60) CHARACTER SET koi8r,
  d_vc     VARCHAR(20) DEFAULT 'dflt ü',
  d_c      CHAR(3) CHARACTER SET latin1 NOT NULL DEFAULT 'abc'
);

CREATE TABLE bins (
  id    INT NOT NULL PRIMARY KEY,
  bn    BINARY(4),
  vb    VARBINARY(20),
  tb    TINYBLOB,
  b     BLOB,
  mb    MEDIUMBLOB,
  lb    LONGBLOB,
  d_bn  BINARY(2) DEFAULT 'ab'
);

CREATE TABLE others (
  id    INT NOT NULL PRIMARY KEY,
  e     ENUM('a', 'b c', 'd''e', 'ü'),
  s     SET('x', 'y', 'z'),
  j     JSON,
  d_e   ENUM('on', 'off') NOT NULL DEFAULT 'off',
  d_s   SET('p', 'q') DEFAULT 'p,q'
);
CREATE TABLE enums4 (id INT NOT NULL PRIMARY KEY, e4 ENUM('a', '😀', '🚀') COLLATE utf8mb4_bin, s4 SET('x', '😀', '🦀') COLLATE utf8mb4_bin);
INSERT INTO enums4 VALUES (1, '😀', '😀,🦀'), (2, '🚀', ''), (3, 'a', 'x'), (4, NULL, NULL);
-- and in the streaming part: INSERT INTO enums4 SELECT id + 100, e4, s4 FROM enums4 WHERE id < 100;

-- Native JSON: objects, arrays, nesting, unicode and escapes, numbers at
-- their extremes (int64, uint64, doubles), scalars, and JSON's own DATE
-- and DATETIME values (CAST AS JSON).
CREATE TABLE jsons (
  id INT NOT NULL PRIMARY KEY,
  j  JSON
);

-- SRID columns (the server refuses values of another SRID) and a spatial
-- index, which needs NOT NULL and an SRID.
CREATE TABLE geo (
  id    INT NOT NULL PRIMARY KEY,
  g     GEOMETRY,
  p     POINT,
  ls    LINESTRING,
  pg    POLYGON,
  mp    MULTIPOINT,
  gc    GEOMETRYCOLLECTION,
  g0    GEOMETRY SRID 0,
  p0    POINT NOT NULL SRID 0,
  SPATIAL INDEX (p0)
);

CREATE TABLE vecs (
  id INT NOT NULL PRIMARY KEY,
  v1 VECTOR(1),
  v3 VECTOR(3),
  vd VECTOR
);

-- Invisible and generated columns: SELECT * shows neither the invisible
-- column nor (for INSERT) accepts values for the generated ones.
CREATE TABLE gens (
  id   INT NOT NULL PRIMARY KEY,
  a    INT,
  b    VARCHAR(20),
  inv  VARCHAR(20) INVISIBLE,
  gv   BIGINT AS (a * 2 + id) VIRTUAL,
  gs   VARCHAR(60) AS (CONCAT(b, '/', COALESCE(inv, '-'))) STORED,
  gj   JSON AS (JSON_OBJECT('a', a, 'b', b)) STORED,
  inv2 INT INVISIBLE DEFAULT 7
);

-- BINARY(16) keys (UUIDs as bytes, with trailing zero bytes) and a
-- composite one.
CREATE TABLE bkeys (
  id BINARY(16) NOT NULL PRIMARY KEY,
  v  VARCHAR(10)
);
CREATE TABLE bkeys2 (
  k1 BINARY(16) NOT NULL,
  k2 VARBINARY(8) NOT NULL,
  v  INT,
  PRIMARY KEY (k1, k2)
);

-- Text keys that differ only in letter case, accent or trailing space:
-- distinct under their binary or accent- and case-sensitive collation.
CREATE TABLE ckeys (
  k  VARCHAR(10) COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
  k2 VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL,
  k3 VARCHAR(10) COLLATE utf8mb4_0900_as_cs NOT NULL,
  UNIQUE KEY (k2),
  UNIQUE KEY (k3)
);

-- Hostile identifiers and a composite key (text, then integer).
CREATE TABLE `we"ird tåble` (
  `région`   VARCHAR(20) NOT NULL,
  `select`   INT NOT NULL,
  `a b`      VARCHAR(20),
  `tick``s`  INT,
  `x"y`      VARCHAR(10),
  `1st`      INT,
  PRIMARY KEY (`région`, `select`)
);

-- No primary key.
CREATE TABLE nokey (
  a INT,
  b VARCHAR(10)
);

CREATE TABLE dups (
  a INT,
  b VARCHAR(10),
  f DOUBLE
);

-- A generated invisible primary key (GIPK): MySQL adds
-- my_row_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT INVISIBLE PRIMARY KEY.
SET SESSION sql_generate_invisible_primary_key = ON;
CREATE TABLE gipk (
  a INT,
  b VARCHAR(10)
);
SET SESSION sql_generate_invisible_primary_key = OFF;

INSERT INTO ints VALUES
  (1, -128, 255, 1, TRUE, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
   -9223372036854775808, 9223372036854775807, -128, -2147483648, 18446744073709551615),
  (2, 127, 0, 0, FALSE, 32767, 0, 8388607, 0, 2147483647, 0,
   9223372036854775807, 9223372036854775808, 127, 2147483647, 0),
  (3, 0, 128, -1, 2, 0, 32768, 0, 8388608, 0, 2147483648, 0, 0, 0, 0, 1);
INSERT INTO ints (id) VALUES (4);
INSERT INTO ints (id, ti, tiu, t1, bo, si, siu, mi, miu, i, iu, bi, biu, d_ti, d_i, d_biu) VALUES
  (5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL);

INSERT INTO nums VALUES
  (1, 99999999999999999999999999999999999.999999999999999999999999999999, 9999999999, 0.99999,
   9999999999999999.9999, 3.40282e38, 9999.999, 1.7976931348623157e308, 99999999.9999, -2.2250738585072014e-308,
   b'1', b'1111111', b'1111111111111111111111111111111111111111111111111111111111111111', -99999.999, -0.0, b'0000'),
  (2, -99999999999999999999999999999999999.999999999999999999999999999999, -9999999999, -0.99999,
   0, -1.17549e-38, -9999.999, 4.9e-324, -99999999.9999, 0.1,
   b'0', b'0000000', b'1000000000000000000000000000000000000000000000000000000000000001', 0, 1e-10, b'1111'),
  (3, 0.000000000000000000000000000001, 0, 0.00001, 0.0001, 1.5, 0.001, 1e-300, 0.0001, 123456789.123456789,
   b'0', b'1010101', b'0', 0.001, 12345.6789, b'0001');
INSERT INTO nums (id) VALUES (4);
INSERT INTO nums (id, d_dec, d_f, d_b) VALUES (5, NULL, NULL, NULL);

INSERT INTO times VALUES
  (1, '1000-01-01', '1000-01-01 00:00:00', '1000-01-01 00:00:00.1', '1000-01-01 00:00:00.001',
   '1000-01-01 00:00:00.0001', '1000-01-01 00:00:00.000001',
   '1970-01-01 00:00:01', '1970-01-01 00:00:01.001', '1970-01-01 00:00:01.000001',
   '-838:59:59', '-838:59:58.999', '-838:59:58.999999', 1901,
   '1000-01-01', '1000-01-01 00:00:00.000', '1970-01-01 00:00:01', '-838:59:59', 1901),
  (2, '9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59.9', '9999-12-31 23:59:59.999',
   '9999-12-31 23:59:59.9999', '9999-12-31 23:59:59.999999',
   '2038-01-19 03:14:07', '2038-01-19 03:14:07.999', '2038-01-19 03:14:07.999999',
   '838:59:59', '838:59:58.999', '838:59:58.999999', 2155,
   '9999-12-31', '9999-12-31 23:59:59.999', '2038-01-19 03:14:07', '838:59:59', 2155),
  (3, '1970-01-01', '1969-12-31 23:59:59', '1969-12-31 23:59:59.5', '1969-12-31 23:59:59.999',
   '2024-02-29 12:34:56.7891', '1900-01-01 00:00:00.000001',
   '2024-02-29 12:34:56', '2024-02-29 12:34:56.100', '2024-02-29 12:34:56.654321',
   '00:00:00', '-00:00:00.001', '24:00:00.000001', 2000,
   '2024-02-29', '2024-02-29 00:00:00.000', '2024-02-29 00:00:00', '00:00:00', 2000);
INSERT INTO times (id) VALUES (4);
INSERT INTO times (id, d_dt, d_dtm, d_tm, d_y) VALUES (5, NULL, NULL, NULL, NULL);

INSERT INTO strs VALUES
  (1, 'ten chars!', 'snapshot ünïcödé 😀 中文', 'tiny', 'it''s "quoted" \\ back\nslash\ttab', 'medium', REPEAT('long ', 2000),
   'café déjà vu ÿ', 'Zażółć gęślą jaźń', 'Съешь же ещё этих булок', '我能吞下玻璃而不伤身体', 'いろはにほへと ｱｲｳ 漢字',
   'BMP only: € ✓ ü', 'ucs2 € ✓ ü', 'ascii~', 'Ä ä A a', 'Ä ä A a', 'Ä ä A a 😀', 'ｱ ア あ 漢',
   '中文 € 😀 ÿ', 'utf16 😀 ü', 'utf32 😀 ü', '中文繁體', '한국어', 'Съешь', 'x', 'xyz'),
  (2, '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', ''),
  (3, 'pad  ', ' lead and trail ', CONCAT('nul', CHAR(0), 'byte'), CONCAT('ctl', CHAR(1), CHAR(31), CHAR(127)), 'ünï', '😀😀😀',
   'Ÿ œ €', 'ąę', '№', '中', 'ア', 'ü', 'ü', ' ', 'é', 'É', 'e ', '𠀋', '𠀋', '', 'tab\t', '碁', '', 'ё', 'y', 'z');
INSERT INTO strs (id) VALUES (4);
INSERT INTO strs (id, d_vc) VALUES (5, NULL);

INSERT INTO bins VALUES
  (1, X'01000000', X'00FF10', X'00', X'DEADBEEF', X'', X'FFFFFFFF00', X'0000'),
  (2, X'00000000', X'', X'', X'', X'00', X'', X'FF00'),
  (3, X'FFFFFFFF', REPEAT(X'AB', 20), X'80', REPEAT(X'00', 1000), X'7F', X'0102', 'zz');
INSERT INTO bins (id) VALUES (4);
INSERT INTO bins (id, d_bn) VALUES (5, NULL);

INSERT INTO others VALUES
  (1, 'a', 'x,z', '{"a": [1, 2.5, {"b": null}], "s": "x", "u": "ü"}', 'on', ''),
  (2, 'd''e', 'x,y,z', '[]', 'off', 'q'),
  (3, 'ü', '', '"text"', 'on', 'p');
INSERT INTO others (id) VALUES (4);
INSERT INTO others (id, d_s) VALUES (5, NULL);

INSERT INTO jsons VALUES
  (1, '{"a": 1, "b": [true, false, null], "c": {"d": {"e": {"f": [[], {}, [[1]]]}}}}'),
  (2, '[9223372036854775807, -9223372036854775808, 18446744073709551615, 1.7976931348623157e308, -2.2250738585072014e-308, 4.9e-324, 0.1, -0.0, 1e-300, 123456789012345678901234567890]'),
  (3, '{"ünï": "cödé 😀 中文", "esc": "quote \\" back \\\\ nl \\n tab \\t ctl \\u0001", "": ""}'),
  (4, '"just a string"'),
  (5, 'null'),
  (6, 'true'),
  (7, '-1'),
  (8, '[]'),
  (9, '{}'),
  (10, NULL),
  (12, JSON_ARRAY(CAST(TIMESTAMP '2024-02-29 12:34:56.789' AS JSON), CAST(TIME '12:34:56' AS JSON))),
  (13, JSON_OBJECT('long', REPEAT('x', 70000), 'n', 1));
INSERT INTO jsons VALUES (11, CAST(DATE '2024-02-29' AS JSON)), (15, JSON_ARRAY(CAST(1.5 AS DECIMAL(5,2))));
INSERT INTO jsons VALUES (14, '{"z": 1, "a": 2, "m": {"b": 3, "a": 4}}');

INSERT INTO geo VALUES
  (1, ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('POINT(-180 -90)'), ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)'),
   ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))'),
   ST_GeomFromText('MULTIPOINT(0 0, 1.5 2.5)'), ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))'),
   ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'), ST_GeomFromText('POINT(-1.5 1e10)')),
  (2, ST_GeomFromText('POINT(1 2)', 4326), ST_GeomFromText('POINT(89 179)', 4326), ST_GeomFromText('LINESTRING(0 0, 1e10 -1e-10)', 3857),
   ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))', 4326), ST_GeomFromText('MULTIPOINT(0 0)', 4326), ST_GeomFromText('GEOMETRYCOLLECTION EMPTY'),
   ST_GeomFromText('GEOMETRYCOLLECTION EMPTY'), ST_GeomFromText('POINT(0 0)'));
INSERT INTO geo (id, p0) VALUES (3, ST_GeomFromText('POINT(3 3)'));

INSERT INTO vecs VALUES
  (1, STRING_TO_VECTOR('[0]'), STRING_TO_VECTOR('[1.5, -2.25, 3.4028235e38]'), STRING_TO_VECTOR('[1.17549435e-38, -0, 1e-30]')),
  (2, STRING_TO_VECTOR('[-1]'), STRING_TO_VECTOR('[0.1, 0.2, 0.3]'), STRING_TO_VECTOR('[1]'));
INSERT INTO vecs (id) VALUES (3);

INSERT INTO gens (id, a, b, inv) VALUES (1, 1, 'one', 'hidden'), (2, -5, 'two', NULL), (3, NULL, NULL, 'h3');
INSERT INTO gens (id, a, b, inv2) VALUES (4, 2147483647, 'max', NULL);

INSERT INTO bkeys VALUES
  (UUID_TO_BIN('123e4567-e89b-12d3-a456-426614174000'), 'uuid'),
  (X'00000000000000000000000000000000', 'zeros'),
  (X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF', 'ones'),
  (X'01000000000000000000000000000000', 'trailing'),
  (X'61000000000000000000000000000000', 'a');
INSERT INTO bkeys2 VALUES
  (X'00000000000000000000000000000001', X'00', 1),
  (X'00000000000000000000000000000001', X'0000', 2),
  (X'00000000000000000000000000000001', X'', 3),
  (X'FF000000000000000000000000000000', X'FFFFFFFFFFFFFF', 4);

INSERT INTO `we"ird tåble` VALUES
  ('eu', 1, 'one', 1, 'q"1', 1),
  ('eu', 2, 'two', 2, '''', 2),
  ('ünï 😀', -2147483648, NULL, NULL, NULL, NULL),
  ('', 0, '', 0, '', 0);

INSERT INTO ckeys VALUES ('a', 'a', 'a'), ('A', 'A', 'A'), ('ä', 'é', 'ä'), ('Ä', 'É', 'Ä');
INSERT INTO nokey VALUES (1, 'a'), (1, 'a'), (NULL, NULL);
INSERT INTO dups VALUES (1, 'a', 0.1), (1, 'a', 0.1), (1, 'A', 0.1), (1, 'a ', 0.1), (NULL, NULL, NULL), (NULL, NULL, NULL), (2, 'x', -0.5);
INSERT INTO gipk (a, b) VALUES (1, 'a'), (1, 'a'), (NULL, NULL);

-- @streaming
SET time_zone = '+00:00';
INSERT INTO enums4 SELECT id + 100, e4, s4 FROM enums4 WHERE id < 100;

-- Every snapshot row again, ids offset by 100, from the binlog.
INSERT INTO ints SELECT id + 100, ti, tiu, t1, bo, si, siu, mi, miu, i, iu, bi, biu, d_ti, d_i, d_biu FROM ints WHERE id < 100;
INSERT INTO nums SELECT id + 100, dec_w, dec0, dec55, decu, f, fmd, d, dmd, r, b1, b7, b64, d_dec, d_f, d_b FROM nums WHERE id < 100;
INSERT INTO times SELECT id + 100, dt, dtm0, dtm1, dtm3, dtm4, dtm6, ts0, ts3, ts6, tm0, tm3, tm6, y, d_dt, d_dtm, d_ts, d_tm, d_y FROM times WHERE id < 100;
INSERT INTO strs SELECT id + 100, c, vc, tt, t, mt, lt, c_latin1, c_latin2, c_cp1251, c_gbk, c_sjis, c_utf8, c_ucs2, c_ascii, c_ai, c_as, c_bin, c_ja, c_gb, c_u16, c_u32, c_big5, c_euckr, c_koi8r, d_vc, d_c FROM strs WHERE id < 100;
INSERT INTO bins SELECT id + 100, bn, vb, tb, b, mb, lb, d_bn FROM bins WHERE id < 100;
INSERT INTO others SELECT id + 100, e, s, j, d_e, d_s FROM others WHERE id < 100;
INSERT INTO jsons SELECT id + 100, j FROM jsons WHERE id < 100;
INSERT INTO geo SELECT id + 100, g, p, ls, pg, mp, gc, g0, p0 FROM geo WHERE id < 100;
INSERT INTO vecs SELECT id + 100, v1, v3, vd FROM vecs WHERE id < 100;
INSERT INTO gens (id, a, b, inv, inv2) SELECT id + 100, a, b, inv, inv2 FROM gens WHERE id < 100;
INSERT INTO bkeys SELECT LEFT(CONCAT(X'AA', id), 16), v FROM bkeys;
INSERT INTO bkeys2 SELECT k1, CONCAT(k2, X'01'), v + 100 FROM bkeys2;
INSERT INTO gipk (a, b) SELECT a, b FROM gipk;
INSERT INTO ckeys SELECT CONCAT(k, '1'), CONCAT(k2, '1'), CONCAT(k3, '1') FROM ckeys;

-- Updates (before and after images), NULL to value and back, deletes.
UPDATE ints SET ti = 1, biu = 18446744073709551614 WHERE id = 101;
UPDATE ints SET ti = NULL, i = 7 WHERE id = 104;
UPDATE nums SET dec_w = 1.5, b64 = b'1' WHERE id = 101;
UPDATE times SET dtm6 = '2025-06-30 10:11:12.000100', tm6 = '12:00:00.5', ts6 = NULL WHERE id = 103;
UPDATE strs SET vc = 'updated ✓', c_cp1251 = 'Ёж', c_gbk = NULL, c_bin = 'b', c_ja = 'か' WHERE id = 101;
UPDATE bins SET bn = X'00000001', vb = X'00' WHERE id = 102;
UPDATE others SET e = 'b c', s = 'y', j = '{"k": "v"}' WHERE id = 101;
UPDATE jsons SET j = JSON_SET(j, '$.a', 2, '$.new', JSON_ARRAY(1, 'ü')) WHERE id = 101;
UPDATE jsons SET j = JSON_REMOVE(j, '$[0]') WHERE id = 102;
UPDATE geo SET p = ST_GeomFromText('POINT(3 4)'), g0 = NULL, p0 = ST_GeomFromText('POINT(5 6)') WHERE id = 101;
UPDATE vecs SET v3 = STRING_TO_VECTOR('[3, 2, 1]'), vd = NULL WHERE id = 101;
UPDATE gens SET a = 10, inv = 'now' WHERE id = 101;
UPDATE gens SET b = 'changed', inv2 = NULL WHERE id = 103;
UPDATE bkeys SET v = 'upd' WHERE id = X'00000000000000000000000000000000';
UPDATE bkeys SET id = X'02000000000000000000000000000000' WHERE id = X'01000000000000000000000000000000';
DELETE FROM bkeys WHERE id = X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF';
DELETE FROM bkeys2 WHERE k2 = X'0000';
UPDATE gipk SET b = 'g' WHERE a = 1 LIMIT 1;
DELETE FROM gipk WHERE a IS NULL LIMIT 1;
UPDATE ckeys SET k3 = 'e' WHERE k = 'A';
DELETE FROM ckeys WHERE k = 'Ä1';
UPDATE `we"ird tåble` SET `a b` = 'zwei', `x"y` = NULL WHERE `région` = 'eu' AND `select` = 2;
DELETE FROM ints WHERE id = 105;
DELETE FROM bins WHERE id = 101;

-- A key change (Debezium: a delete and a create) inside a transaction.
BEGIN;
INSERT INTO `we"ird tåble` VALUES ('us', 3, 'tx', 3, 'z', 3);
UPDATE `we"ird tåble` SET `select` = 4 WHERE `région` = 'us' AND `select` = 3;
UPDATE `we"ird tåble` SET `région` = 'ap' WHERE `région` = 'eu' AND `select` = 1;
COMMIT;

-- Rows without a key.
INSERT INTO nokey VALUES (2, 'b');
UPDATE nokey SET b = 'c' WHERE a = 2;
DELETE FROM nokey WHERE a IS NULL;
INSERT INTO dups VALUES (3, 'n', 1e-300);
UPDATE dups SET b = 'B' WHERE b = 'A' COLLATE utf8mb4_bin;
UPDATE dups SET a = 9 WHERE b = 'a ' COLLATE utf8mb4_bin;
UPDATE dups SET b = 'one' WHERE b = 'a' COLLATE utf8mb4_bin LIMIT 1;
DELETE FROM dups WHERE a IS NULL LIMIT 1;
UPDATE dups SET f = 0.25 WHERE a = 3;
DELETE FROM dups WHERE a = 2;

-- Partial JSON updates (the binlog carries the diff; FULL row image).
-- JSON update"). Restore these six lines without their "-- ":
SET SESSION binlog_row_value_options = 'PARTIAL_JSON';
UPDATE jsons SET j = JSON_SET(j, '$.b[1]', 'partial ü', '$.c.d.e.x', 1) WHERE id = 1;
UPDATE jsons SET j = JSON_REPLACE(j, '$[8]', 2.5), j = JSON_REMOVE(j, '$[9]') WHERE id = 2;
UPDATE jsons SET j = JSON_SET(j, '$.long', 'short') WHERE id = 113;
SET SESSION binlog_row_value_options = '';

-- MySQL DDL: an SRID column, a spatial index, visibility changes.
ALTER TABLE geo ADD COLUMN p4326 POINT SRID 4326, ALTER COLUMN g0 SET INVISIBLE;
UPDATE geo SET p4326 = ST_GeomFromText('POINT(45 -120)', 4326) WHERE id = 2;
ALTER TABLE gens ALTER COLUMN inv SET VISIBLE;
CREATE TABLE late_geo (id INT PRIMARY KEY, p POINT SRID 4326 NOT NULL, SPATIAL INDEX (p), v INT INVISIBLE);
INSERT INTO late_geo (id, p, v) VALUES (1, ST_GeomFromText('POINT(10 20)', 4326), 5);

-- DDL: a column added with a default, a type widened, a new table.
ALTER TABLE ints ADD COLUMN added VARCHAR(10) NOT NULL DEFAULT 'new';
INSERT INTO ints (id, ti, added) VALUES (110, 3, 'after ddl');
ALTER TABLE strs MODIFY COLUMN c VARCHAR(20);
UPDATE strs SET c = 'now twenty chars ok' WHERE id = 102;
CREATE TABLE late (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, v DECIMAL(4,2) DEFAULT 0.5, f FLOAT(5,2), g DOUBLE(9,3));
INSERT INTO late VALUES (18446744073709551615, 99.99, -999.99, 123456.789), (1, NULL, 0.01, NULL);
TRUNCATE TABLE nokey;
