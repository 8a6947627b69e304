-- An online shop: customers place orders of products.
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL, signup_year INTEGER NOT NULL);
CREATE TABLE product (product_id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price REAL NOT NULL, stock INTEGER NOT NULL);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customer(customer_id), order_year INTEGER NOT NULL, status TEXT NOT NULL);
CREATE TABLE order_item (order_id INTEGER NOT NULL REFERENCES orders(order_id), product_id INTEGER NOT NULL REFERENCES product(product_id), quantity INTEGER NOT NULL, PRIMARY KEY (order_id, product_id));
INSERT INTO customer VALUES
  (1, 'Nora Diaz', 'Spain', 2019), (2, 'Oskar Berg', 'Norway', 2020), (3, 'Priya Rao', 'India', 2018),
  (4, 'Quentin Roy', 'France', 2021), (5, 'Rosa Lima', 'Brazil', 2022), (6, 'Sam Okoro', 'Nigeria', 2020), (7, 'Tara Singh', 'India', 2023);
INSERT INTO product VALUES
  (1, 'Trail Shoes', 'footwear', 89.5, 40), (2, 'Rain Jacket', 'clothing', 120.0, 15), (3, 'Wool Socks', 'clothing', 12.0, 200),
  (4, 'Head Torch', 'gear', 35.0, 60), (5, 'Camp Stove', 'gear', 75.0, 0), (6, 'Water Filter', 'gear', 45.0, 25),
  (7, 'Sandals', 'footwear', 40.0, 8), (8, 'Sun Hat', 'clothing', 22.0, 55);
INSERT INTO orders VALUES
  (1, 1, 2021, 'delivered'), (2, 1, 2022, 'delivered'), (3, 2, 2022, 'cancelled'), (4, 3, 2021, 'delivered'),
  (5, 3, 2023, 'shipped'), (6, 4, 2023, 'delivered'), (7, 5, 2023, 'shipped'), (8, 6, 2022, 'delivered'),
  (9, 6, 2023, 'cancelled'), (10, 3, 2023, 'delivered');
INSERT INTO order_item VALUES
  (1, 1, 1), (1, 3, 3), (2, 2, 1), (3, 5, 1), (4, 4, 2), (4, 6, 1), (5, 1, 1), (5, 8, 2), (6, 3, 5),
  (7, 7, 1), (7, 3, 2), (8, 2, 1), (8, 4, 1), (9, 6, 2), (10, 8, 1), (10, 1, 2);
