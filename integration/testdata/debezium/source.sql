-- The statements behind events.jsonl (scripts/debezium-fixture/run.sh runs
-- them). The part before the "-- @streaming" line runs before Debezium
-- starts, so its rows arrive as snapshot reads (op r); the part after it runs
-- once the snapshot is done and arrives as binlog events (c, u, d).
-- The session time zone is UTC so that TIMESTAMP literals mean what they say.
SET time_zone = '+00:00';
CREATE DATABASE dbz_fixture CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
USE dbz_fixture;
CREATE TABLE types (
  id        INT NOT NULL PRIMARY KEY,
  ti        TINYINT,
  tiu       TINYINT UNSIGNED,
  si        SMALLINT,
  siu       SMALLINT UNSIGNED,
  mi        MEDIUMINT,
  miu       MEDIUMINT UNSIGNED,
  i         INT,
  iu        INT UNSIGNED,
  bi        BIGINT,
  biu       BIGINT UNSIGNED,
  flag      BOOLEAN,
  dec_small DECIMAL(10,2),
  dec_big   DECIMAL(30,10),
  f         FLOAT,
  d         DOUBLE,
  dt        DATE,
  dtm0      DATETIME,
  dtm3      DATETIME(3),
  dtm6      DATETIME(6),
  ts6       TIMESTAMP(6) NULL DEFAULT NULL,
  tm0       TIME,
  tm6       TIME(6),
  vc        VARCHAR(100),
  txt       TEXT,
  bl        BLOB,
  vb        VARBINARY(16),
  e         ENUM('red','green','blue'),
  st        SET('a','b','c'),
  b1        BIT(1),
  b12       BIT(12),
  y         YEAR,
  j         JSON
);
CREATE TABLE pairs (
  region VARCHAR(20) NOT NULL,
  n      INT NOT NULL,
  label  VARCHAR(50),
  PRIMARY KEY (region, n)
);
INSERT INTO types VALUES
  (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
   -9223372036854775808, 9223372036854775807, TRUE,
   -12345678.90, 12345678901234567890.0123456789, 1.5, -2.25e-300,
   '2024-02-29', '2024-02-29 23:59:59', '1999-12-31 23:59:59.123', '2038-01-19 03:14:07.999999',
   '2024-02-29 12:34:56.654321', '-838:59:59', '23:59:59.999999',
   'snapshot ünïcödé 😀', 'long text', X'00FF10', X'DEADBEEF', 'green', 'a,c', b'1', b'101010101010', 2155,
   '{"a": [1, 2, {"b": null}], "s": "x"}'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO pairs VALUES ('eu', 1, 'one'), ('eu', 2, 'two'), ('us', 1, 'uno');
-- @streaming
SET time_zone = '+00:00';
USE dbz_fixture;
INSERT INTO types VALUES
  (3, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 18446744073709551, FALSE,
   99999999.99, -0.0000000001, -3.25, 1.7976931348623157e308,
   '1970-01-01', '1970-01-01 00:00:00', '1969-12-31 23:59:59.999', '1900-01-01 00:00:00.000001',
   '1970-01-01 00:00:01.000000', '00:00:00', '-00:00:00.000001',
   'it''s "quoted" \\ back', '', X'', X'00', 'red', '', b'0', b'000000000001', 1901,
   '[]');
INSERT INTO types (id, vc) VALUES (4, 'to be deleted');
UPDATE types SET txt = 'updated', dec_small = 0.01, tm6 = '12:00:00.5', dtm6 = '2025-06-30 10:11:12.000100', e = 'blue', st = 'a,b,c', j = '{"k": "v"}' WHERE id = 1;
UPDATE types SET ti = 5, txt = 'was null', ts6 = '2030-01-01 00:00:00.000001', b12 = b'111111111111' WHERE id = 2;
DELETE FROM types WHERE id = 4;
BEGIN;
INSERT INTO types (id, bi, vc) VALUES (5, 42, 'in a transaction');
UPDATE types SET bi = 43 WHERE id = 5;
UPDATE types SET id = 6 WHERE id = 5;
COMMIT;
UPDATE pairs SET label = 'zwei' WHERE region = 'eu' AND n = 2;
UPDATE pairs SET n = 3 WHERE region = 'us' AND n = 1;
DELETE FROM pairs WHERE region = 'eu' AND n = 1;
INSERT INTO pairs VALUES ('ap', 7, NULL);
