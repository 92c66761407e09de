// What tedious uses of @js-joda/core, bundled in its place (infra/bundle/esbuild-plugins.cjs): the
// number of days between two dates of the proleptic Gregorian calendar, to write `date`,
// `datetime`, `datetime2` and `datetimeoffset` parameters. js-joda is 200 KB of the driver chunk
// that every first database call parsed and initialised (~15 ms) for these three calls:
//   LocalDate.ofYearDay(year, dayOfYear), LocalDate.of(year, month, day),
//   date.until(otherDate, ChronoUnit.DAYS)
// The arithmetic is js-joda's own (LocalDate.toEpochDay); tests/package/js-joda-days.test.ts holds
// it to js-joda's answers and to tedious's encoded parameters with either.

/** Integer division rounding towards zero, as js-joda's MathUtil.intDiv. */
const intDiv = (a, b) => Math.trunc(a / b);
const isLeapYear = (year) => (year & 3) === 0 && (year % 100 !== 0 || year % 400 === 0);
const DAYS_0000_TO_1970 = 719528;
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function checkInt(name, value, min, max) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} ${value} is not an integer from ${min} to ${max}`);
  }
}

const DAYS = Object.freeze({ toString: () => 'Days' });
const ChronoUnit = Object.freeze({ DAYS });

class LocalDate {
  constructor(year, month, day) {
    checkInt('year', year, -999999999, 999999999);
    checkInt('month', month, 1, 12);
    checkInt('day', day, 1, month === 2 && isLeapYear(year) ? 29 : MONTH_DAYS[month - 1]);
    this._year = year;
    this._month = month;
    this._day = day;
    Object.freeze(this);
  }

  static of(year, month, day) {
    return new LocalDate(year, month, day);
  }

  static ofYearDay(year, dayOfYear) {
    checkInt('year', year, -999999999, 999999999);
    checkInt('dayOfYear', dayOfYear, 1, isLeapYear(year) ? 366 : 365);
    let month = 1;
    let day = dayOfYear;
    for (;;) {
      const length = month === 2 && isLeapYear(year) ? 29 : MONTH_DAYS[month - 1];
      if (day <= length) break;
      day -= length;
      month += 1;
    }
    return new LocalDate(year, month, day);
  }

  /** Days since 1970-01-01 (negative before). */
  toEpochDay() {
    const y = this._year;
    const m = this._month;
    let total = 365 * y;
    if (y >= 0) total += intDiv(y + 3, 4) - intDiv(y + 99, 100) + intDiv(y + 399, 400);
    else total -= intDiv(y, -4) - intDiv(y, -100) + intDiv(y, -400);
    total += intDiv(367 * m - 362, 12);
    total += this._day - 1;
    if (m > 2) {
      total -= 1;
      if (!isLeapYear(y)) total -= 1;
    }
    return total - DAYS_0000_TO_1970;
  }

  /** Whole days from this date to `end`; only ChronoUnit.DAYS is bundled. */
  until(end, unit) {
    if (unit !== DAYS)
      throw new Error('Only ChronoUnit.DAYS of @js-joda/core is bundled (infra/bundle/js-joda-days.cjs)');
    if (!(end instanceof LocalDate)) throw new TypeError('until() takes a LocalDate');
    return end.toEpochDay() - this.toEpochDay();
  }

  year() {
    return this._year;
  }

  monthValue() {
    return this._month;
  }

  dayOfMonth() {
    return this._day;
  }

  toString() {
    const pad = (n, w) => String(Math.abs(n)).padStart(w, '0');
    return `${this._year < 0 ? '-' : ''}${pad(this._year, 4)}-${pad(this._month, 2)}-${pad(this._day, 2)}`;
  }
}

module.exports = { LocalDate, ChronoUnit };
