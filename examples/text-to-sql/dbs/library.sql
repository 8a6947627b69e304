-- A small lending library: authors write books; members borrow them.
CREATE TABLE author (author_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL, born INTEGER);
CREATE TABLE book (book_id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER NOT NULL REFERENCES author(author_id), year INTEGER NOT NULL, genre TEXT NOT NULL, pages INTEGER NOT NULL);
CREATE TABLE member (member_id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL, joined INTEGER NOT NULL);
CREATE TABLE loan (loan_id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL REFERENCES book(book_id), member_id INTEGER NOT NULL REFERENCES member(member_id), days INTEGER NOT NULL, returned INTEGER NOT NULL);
INSERT INTO author VALUES
  (1, 'Ines Moreau', 'France', 1948), (2, 'Tomas Lindqvist', 'Sweden', 1971), (3, 'Amara Okafor', 'Nigeria', 1985),
  (4, 'Kenji Watanabe', 'Japan', 1962), (5, 'Lucia Ferri', 'Italy', 1990), (6, 'Peter Hall', 'Canada', 1955);
INSERT INTO book VALUES
  (1, 'The Salt Road', 1, 1979, 'novel', 312), (2, 'Winter Harbour', 2, 2004, 'crime', 410), (3, 'Cold Ledger', 2, 2009, 'crime', 388),
  (4, 'River of Glass', 3, 2015, 'novel', 275), (5, 'The Quiet Engine', 4, 1998, 'science', 520), (6, 'Paper Lanterns', 4, 2011, 'poetry', 96),
  (7, 'Small Hours', 5, 2019, 'poetry', 120), (8, 'Northern Lights Over Oslo', 2, 2016, 'crime', 455), (9, 'Maps of the Sky', 6, 1990, 'science', 360),
  (10, 'The Orchard', 1, 1985, 'novel', 290), (11, 'Signal and Noise', 6, 2001, 'science', 410), (12, 'Lagos Mornings', 3, 2020, 'novel', 230);
INSERT INTO member VALUES
  (1, 'Ada Brooks', 'Leeds', 2015), (2, 'Ben Carter', 'York', 2018), (3, 'Chloe Dunn', 'Leeds', 2020),
  (4, 'Dev Patel', 'Bristol', 2012), (5, 'Emma Frost', 'York', 2021), (6, 'Farid Haddad', 'Bristol', 2019);
INSERT INTO loan VALUES
  (1, 1, 1, 14, 1), (2, 2, 1, 21, 1), (3, 5, 2, 7, 1), (4, 2, 3, 14, 0), (5, 8, 4, 28, 1), (6, 4, 4, 14, 1),
  (7, 9, 5, 10, 0), (8, 11, 2, 14, 1), (9, 3, 6, 21, 1), (10, 12, 3, 7, 0), (11, 2, 6, 14, 1), (12, 6, 1, 5, 1),
  (13, 1, 4, 30, 1), (14, 7, 5, 3, 1);
