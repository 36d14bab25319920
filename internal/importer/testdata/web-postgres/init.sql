CREATE TABLE users (name text PRIMARY KEY, password text NOT NULL);
INSERT INTO users VALUES ('admin', 'it''s a secret');
