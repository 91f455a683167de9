// jest globalSetup: the one line `npm test` prints when the PostgreSQL rows cannot run.
module.exports = async () => {
  if (!process.env.TEST_DATABASE_URL) {
    console.log('\nPostgreSQL rows skipped (event-store contract, kill test, split roles, outage): TEST_DATABASE_URL is not set; .ci/run sets it.');
  }
};
