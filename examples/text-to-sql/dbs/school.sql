-- A school: students enrol in courses taught by teachers and receive grades.
CREATE TABLE teacher (teacher_id INTEGER PRIMARY KEY, name TEXT NOT NULL, department TEXT NOT NULL, hired INTEGER NOT NULL);
CREATE TABLE course (course_id INTEGER PRIMARY KEY, title TEXT NOT NULL, teacher_id INTEGER NOT NULL REFERENCES teacher(teacher_id), credits INTEGER NOT NULL);
CREATE TABLE student (student_id INTEGER PRIMARY KEY, name TEXT NOT NULL, year INTEGER NOT NULL, house TEXT NOT NULL);
CREATE TABLE enrollment (student_id INTEGER NOT NULL REFERENCES student(student_id), course_id INTEGER NOT NULL REFERENCES course(course_id), grade INTEGER, PRIMARY KEY (student_id, course_id));
INSERT INTO teacher VALUES
  (1, 'Dr. Helen Cho', 'Mathematics', 2005), (2, 'Mr. Ivan Petrov', 'Physics', 2012), (3, 'Ms. Julia Wren', 'History', 2018), (4, 'Dr. Karl Weiss', 'Mathematics', 2020);
INSERT INTO course VALUES
  (1, 'Algebra', 1, 4), (2, 'Geometry', 4, 3), (3, 'Mechanics', 2, 4), (4, 'Modern History', 3, 2), (5, 'Statistics', 1, 3), (6, 'Optics', 2, 2);
INSERT INTO student VALUES
  (1, 'Liam Ash', 10, 'Oak'), (2, 'Mia Bell', 11, 'Elm'), (3, 'Noah Cole', 10, 'Elm'), (4, 'Olivia Dale', 12, 'Oak'),
  (5, 'Pablo East', 11, 'Ash'), (6, 'Quinn Ford', 12, 'Ash'), (7, 'Ruby Gale', 10, 'Oak');
INSERT INTO enrollment VALUES
  (1, 1, 78), (1, 3, 65), (2, 1, 91), (2, 4, 84), (2, 5, 88), (3, 2, 55), (3, 3, 72), (4, 5, 95), (4, 6, 81),
  (5, 4, 67), (5, 1, 70), (6, 3, 89), (6, 6, 92), (6, 5, NULL), (7, 2, 60), (7, 4, 74);
