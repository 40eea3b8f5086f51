-- The type matrix: every MySQL/MariaDB column type at its extremes, NULLs,
-- several character sets, hostile identifiers, a composite key, a table
-- without a key, column defaults, and DDL, through the snapshot and the
-- binlog. Used by the Debezium conformance test (integration/debezium_test.go
-- with scripts/debezium-fixture) and by target-landing tests.
--
-- Format (for every runner):
--   * The runner creates the database and runs everything with it as the
--     default database; no statement here names a database.
--   * Statements end with ";" at the end of a line; lines starting with "--"
--     are comments. No statement contains ";" followed by a newline.
--   * The part before the line "-- @streaming" runs before capture starts
--     (its rows arrive as snapshot reads, op r); the part after it runs once
--     the snapshot is done (binlog events c, u, d, DDL).
--   * Rows of the streaming part repeat the snapshot's values with ids
--     offset by 100, so every value travels both paths.
--   * The session time zone is UTC so that TIMESTAMP literals mean what they
--     say; sql_mode is the server's (strict).
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
  u     UUID,
  d_e   ENUM('on', 'off') NOT NULL DEFAULT 'off',
  d_s   SET('p', 'q') DEFAULT 'p,q'
);

-- Debezium 3.4's DDL parser cannot parse INET4 or INET6 (it stops the
-- connector): the conformance test leaves this table out of Debezium.
CREATE TABLE inets (
  id    INT NOT NULL PRIMARY KEY,
  i4    INET4,
  i6    INET6,
  d_i4  INET4 DEFAULT '127.0.0.1',
  d_i6  INET6 DEFAULT '::1'
);

CREATE TABLE geo (
  id    INT NOT NULL PRIMARY KEY,
  g     GEOMETRY,
  p     POINT,
  ls    LINESTRING,
  pg    POLYGON,
  mp    MULTIPOINT,
  gc    GEOMETRYCOLLECTION
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

-- No primary key: Debezium's key is null.
CREATE TABLE nokey (
  a INT,
  b VARCHAR(10)
);

-- No primary key either, and never truncated: exact duplicates, NULLs,
-- text that differs only in letter case or a trailing space; the sink
-- finds the row of each update and delete by its whole before image.
CREATE TABLE dups (
  a INT,
  b VARCHAR(10),
  f DOUBLE
);

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
   'BMP only: € ✓ ü', 'ucs2 € ✓ ü', 'ascii~', 'x', 'xyz'),
  (2, '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', ''),
  (3, 'pad  ', ' lead and trail ', CONCAT('nul', CHAR(0), 'byte'), CONCAT('ctl', CHAR(1), CHAR(31), CHAR(127)), 'ünï', '😀😀😀',
   'Ÿ œ €', 'ąę', '№', '中', 'ア', 'ü', 'ü', ' ', 'y', 'z');
INSERT INTO strs (id) VALUES (4);
INSERT INTO strs (id, d_vc) VALUES (5, NULL);

INSERT INTO bins VALUES
  (1, X'01000000', X'00FF10', X'00', X'DEADBEEF', X'', X'FFFFFFFF00', X'0000'),
  (2, X'00000000', X'', X'', X'', X'00', X'', X'FF00'),
  (3, X'FFFFFFFF', REPEAT(X'AB', 20), X'80', REPEAT(X'00', 1000), X'7F', X'0102', 'zz');
INSERT INTO bins (id) VALUES (4);
INSERT INTO bins (id, d_bn) VALUES (5, NULL);

INSERT INTO others VALUES
  (1, 'a', 'x,z', '{"a": [1, 2.5, {"b": null}], "s": "x", "u": "ü"}', '123e4567-e89b-12d3-a456-426614174000',
   'on', ''),
  (2, 'd''e', 'x,y,z', '[]', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
   'off', 'q'),
  (3, 'ü', '', '"text"', '00000000-0000-0000-0000-000000000000', 'on', 'p');
INSERT INTO others (id) VALUES (4);
INSERT INTO others (id, d_s) VALUES (5, NULL);

INSERT INTO inets VALUES
  (1, '0.0.0.0', '::', '255.255.255.255', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'),
  (2, '10.0.0.1', '2001:db8::ff00:42:8329', NULL, '::ffff:1.2.3.4');
INSERT INTO inets (id) VALUES (3);

INSERT INTO geo VALUES
  (1, ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('POINT(-180 -90)'), ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)'),
   ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))'),
   ST_GeomFromText('MULTIPOINT(0 0, 1.5 2.5)'), ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))')),
  (2, ST_GeomFromText('POINT(1 2)', 4326), ST_GeomFromText('POINT(180 90)', 4326), ST_GeomFromText('LINESTRING(0 0, 1e10 -1e-10)', 3857),
   ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))', 4326), ST_GeomFromText('MULTIPOINT(0 0)', 4326), ST_GeomFromText('GEOMETRYCOLLECTION EMPTY'));
INSERT INTO geo (id) VALUES (3);

INSERT INTO `we"ird tåble` VALUES
  ('eu', 1, 'one', 1, 'q"1', 1),
  ('eu', 2, 'two', 2, '''', 2),
  ('ünï 😀', -2147483648, NULL, NULL, NULL, NULL),
  ('', 0, '', 0, '', 0);

INSERT INTO nokey VALUES (1, 'a'), (1, 'a'), (NULL, NULL);
INSERT INTO dups VALUES (1, 'a', 0.1), (1, 'a', 0.1), (1, 'A', 0.1), (1, 'a ', 0.1), (NULL, NULL, NULL), (NULL, NULL, NULL), (2, 'x', -0.5);

-- @streaming
SET time_zone = '+00:00';

-- Every snapshot row again, ids offset by 100, from the binlog.
INSERT INTO ints SELECT id + 100, ti, tiu, t1, bo, si, siu, mi, miu, i, iu, bi, biu, d_ti, d_i, d_biu FROM ints WHERE id < 100;
INSERT INTO nums SELECT id + 100, dec_w, dec0, dec55, decu, f, fmd, d, dmd, r, b1, b7, b64, d_dec, d_f, d_b FROM nums WHERE id < 100;
INSERT INTO times SELECT id + 100, dt, dtm0, dtm1, dtm3, dtm4, dtm6, ts0, ts3, ts6, tm0, tm3, tm6, y, d_dt, d_dtm, d_ts, d_tm, d_y FROM times WHERE id < 100;
INSERT INTO strs SELECT id + 100, c, vc, tt, t, mt, lt, c_latin1, c_latin2, c_cp1251, c_gbk, c_sjis, c_utf8, c_ucs2, c_ascii, d_vc, d_c FROM strs WHERE id < 100;
INSERT INTO bins SELECT id + 100, bn, vb, tb, b, mb, lb, d_bn FROM bins WHERE id < 100;
INSERT INTO others SELECT id + 100, e, s, j, u, d_e, d_s FROM others WHERE id < 100;
INSERT INTO inets SELECT id + 100, i4, i6, d_i4, d_i6 FROM inets WHERE id < 100;
INSERT INTO geo SELECT id + 100, g, p, ls, pg, mp, gc FROM geo WHERE id < 100;

-- Updates (before and after images), NULL to value and back, deletes.
UPDATE ints SET ti = 1, biu = 18446744073709551614 WHERE id = 101;
UPDATE ints SET ti = NULL, i = 7 WHERE id = 104;
UPDATE nums SET dec_w = 1.5, b64 = b'1' WHERE id = 101;
UPDATE times SET dtm6 = '2025-06-30 10:11:12.000100', tm6 = '12:00:00.5', ts6 = NULL WHERE id = 103;
UPDATE strs SET vc = 'updated ✓', c_cp1251 = 'Ёж', c_gbk = NULL WHERE id = 101;
UPDATE bins SET bn = X'00000001', vb = X'00' WHERE id = 102;
UPDATE others SET e = 'b c', s = 'y', j = '{"k": "v"}' WHERE id = 101;
UPDATE geo SET p = ST_GeomFromText('POINT(3 4)') WHERE id = 101;
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

-- DDL: a column added with a default, a type widened, a new table.
ALTER TABLE ints ADD COLUMN added VARCHAR(10) NOT NULL DEFAULT 'new';
INSERT INTO ints (id, ti, added) VALUES (110, 3, 'after ddl');
ALTER TABLE strs MODIFY COLUMN c VARCHAR(20);
UPDATE strs SET c = 'now twenty chars ok' WHERE id = 102;
CREATE TABLE late (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, v DECIMAL(4,2) DEFAULT 0.5, f FLOAT(5,2), g DOUBLE(9,3));
INSERT INTO late VALUES (18446744073709551615, 99.99, -999.99, 123456.789), (1, NULL, 0.01, NULL);
TRUNCATE TABLE nokey;

